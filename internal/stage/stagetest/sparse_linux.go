package stagetest

import (
	"bytes"
	"io"
	"os"
	"syscall"
	"testing"
)

// SparseImage writes a 64 MiB file at p holding 4 KiB of data at each of
// a few offsets, and returns those offsets.
func SparseImage(t *testing.T, p string) []int64 {
	t.Helper()
	const size = 64 << 20
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	must(t, err)
	defer f.Close()
	at := []int64{0, size/3 + 123, size - 4096}
	for i, off := range at {
		_, err := f.WriteAt(bytes.Repeat([]byte{byte('a' + i)}, 4096), off)
		must(t, err)
	}
	must(t, f.Truncate(size))
	must(t, f.Sync())
	return at
}

// Allocated is the disk a file takes, in bytes.
func Allocated(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Stat(p, &st))
	return st.Blocks * 512
}

// SameSparse fails unless the staged file got holds want's bytes and
// takes no more disk than it, give or take 64 KiB.
func SameSparse(t *testing.T, want, got string) {
	t.Helper()
	if !SameBytes(t, want, got) {
		t.Fatalf("%s does not hold the bytes of %s", got, want)
	}
	if a, b := Allocated(t, want), Allocated(t, got); b > a+64<<10 {
		t.Errorf("%s takes %d KiB of disk, the base's file %d KiB: staging filled its holes", got, b>>10, a>>10)
	}
}

func SameBytes(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Open(a)
	must(t, err)
	defer fa.Close()
	fb, err := os.Open(b)
	must(t, err)
	defer fb.Close()
	x, y := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		n, ea := io.ReadFull(fa, x)
		m, eb := io.ReadFull(fb, y)
		if n != m || !bytes.Equal(x[:n], y[:m]) {
			return false
		}
		if ea != nil || eb != nil {
			return (ea == io.EOF || ea == io.ErrUnexpectedEOF) && ea == eb
		}
	}
}
