package pool

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/stage"
)

// sparseImage writes a 64 MiB file at p holding 4 KiB of data at each of
// a few offsets, and returns those offsets.
func sparseImage(t *testing.T, p string) []int64 {
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

// allocated is the disk a file takes, in bytes.
func allocated(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Stat(p, &st))
	return st.Blocks * 512
}

// sameSparse fails unless the staged file got holds want's bytes and
// takes no more disk than it, give or take 64 KiB.
func sameSparse(t *testing.T, want, got string) {
	t.Helper()
	if !sameBytes(t, want, got) {
		t.Fatalf("%s does not hold the bytes of %s", got, want)
	}
	if a, b := allocated(t, want), allocated(t, got); b > a+64<<10 {
		t.Errorf("%s takes %d KiB of disk, the base's file %d KiB: staging filled its holes", got, b>>10, a>>10)
	}
}

func sameBytes(t *testing.T, a, b string) bool {
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

// TestRefreshKeepsHoles refreshes a pooled tree whose copy of a sparse
// file the command rewrote: the file is copied again from the base, with
// its holes (as internal/stage's TestStageKeepsHoles stages it).
func TestRefreshKeepsHoles(t *testing.T) {
	base := t.TempDir()
	sparseImage(t, filepath.Join(base, "img"))
	dir, p := pool(t, base, func(dir string) {
		// The command fills the staged copy: the refresh must copy
		// the base's file again.
		f, err := os.OpenFile(filepath.Join(dir, "img"), os.O_WRONLY, 0)
		must(t, err)
		_, err = f.WriteAt(bytes.Repeat([]byte{'z'}, 1<<20), 1<<20)
		must(t, err)
		must(t, f.Close())
	})
	_, done, err := Refresh(t.Context(), stage.Request{Base: base, Dir: dir}, p)
	if err != nil {
		t.Fatal(err)
	}
	if done.Copied != 1 {
		t.Fatalf("refresh copied %d files, want the 1 the command wrote", done.Copied)
	}
	sameSparse(t, filepath.Join(base, "img"), filepath.Join(dir, "img"))
}
