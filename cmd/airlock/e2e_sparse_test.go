package main_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// sparseFile is the content of a large file that is mostly holes: its
// length and the bytes it holds at a few offsets (zeros everywhere else).
type sparseFile struct {
	size int64
	data map[int64][]byte
}

func (s sparseFile) write(t *testing.T, p string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for off, b := range s.data {
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(s.size); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// with is s with b written at off.
func (s sparseFile) with(off int64, b []byte) sparseFile {
	d := map[int64][]byte{off: b}
	for o, v := range s.data {
		d[o] = v
	}
	return sparseFile{s.size, d}
}

// sparseSlack is the disk a copy of the test's image may take: its data is
// a few KiB, a dense copy 1 GiB.
const sparseSlack = 1 << 20

// wantSparse fails unless the file at p holds exactly s and takes no more
// than sparseSlack of disk. The bytes are compared as they stream, so no
// 1 GiB buffer is held.
func wantSparse(t *testing.T, what, p string, s sparseFile) {
	t.Helper()

	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if st.Size != s.size {
		t.Errorf("%s %s: %d bytes, want %d", what, p, st.Size, s.size)
		return
	}
	if st.Blocks*512 > sparseSlack {
		t.Errorf("%s %s takes %d KiB of disk for a few KiB of data: its holes were filled", what, p, st.Blocks/2)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const chunk = 4 << 20
	got, want := make([]byte, chunk), make([]byte, chunk)
	for off := int64(0); off < s.size; off += chunk {
		n, err := io.ReadFull(f, got)
		if err != nil && err != io.ErrUnexpectedEOF {
			t.Fatalf("%s %s: %v", what, p, err)
		}
		clear(want)
		for o, b := range s.data {
			// Overlay what of b falls in [off, off+n).
			lo, hi := max(o, off), min(o+int64(len(b)), off+int64(n))
			if lo < hi {
				copy(want[lo-off:hi-off], b[lo-o:hi-o])
			}
		}
		if !bytes.Equal(got[:n], want[:n]) {
			t.Errorf("%s %s: bytes differ in [%d, %d)", what, p, off, off+int64(n))
			return
		}
	}
}

// oneFile is the only entry of dir matching pattern.
func oneFile(t *testing.T, what, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) != 1 {
		t.Fatalf("%s: want exactly one %s, found %v (%v)", what, pattern, m, err)
	}
	return m[0]
}

// sparseTimeout bounds each airlock process of the sparse test: a commit
// of a 1 GiB file, holes or not, hashes it several times (about a second
// each on a busy machine's core).
const sparseTimeout = 5 * time.Minute

// waitPaused waits until the pause point of the process p is reached, and
// fails at once if p ends before it does.
func waitPaused(t *testing.T, p proc, pause string) {
	t.Helper()
	deadline := time.Now().Add(sparseTimeout)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(filepath.Join(pause, "reached")); err == nil {
			return
		}
		select {
		case <-p.Done():
			t.Fatalf("airlock ended before its pause point: %v", p.Wait())
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("the pause point was not reached within %v", sparseTimeout)
}

// A 1 GiB sparse image holding a few KiB: a one-byte edit commits and
// undoes with every copy on the way as sparse as the image. The staged
// tree (checked by the command itself, before it edits), the validator's
// candidate tree (checked by the validator), the frozen object, the
// journal's backup and the base (at the "applied" pause point), the
// original kept for undo, and the base after the undo each hold the exact
// bytes in a few KiB of disk. A copy that fills holes fails the command
// or the validator at once, before any commit is attempted.
func TestE2ESparseFileStaysSparse(t *testing.T) {
	x := newH(t)
	img := filepath.Join(x.base, "img")
	rng := rand.New(rand.NewChaCha8([32]byte{18}))
	block := func() []byte {
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	const size = 1 << 30
	before := sparseFile{size, map[int64][]byte{0: block(), size/3 + 777: block(), size - 4096: block()}}
	before.write(t, img)
	var st syscall.Stat_t
	if err := syscall.Stat(img, &st); err != nil || st.Blocks*512 > sparseSlack {
		testbin.Missing(t, "%s takes %d blocks for 12 KiB of data: the test's file system keeps no holes (%v)", img, st.Blocks, err)
	}
	const seek = size/2 + 5
	after := before.with(seek, []byte("x"))

	check := fmt.Sprintf(`b=$(stat -c %%b img); [ "$b" -le %d ] || { echo "$1: img takes $b blocks" >&2; exit 3; }`, sparseSlack/512)
	pause := t.TempDir()
	p := x.start(run{timeout: sparseTimeout, env: []string{"AIRLOCK_TEST_PAUSE=applied:" + pause}, args: []string{"run", "--workdir", x.base, "--id", "sparse",
		"--validate", "sh -c '" + check + "' sh candidate",
		"--", "sh", "-c", check + "\nprintf x | dd of=img bs=1 seek=" + fmt.Sprint(seek) + " conv=notrunc status=none", "sh", "staged tree"}})
	waitPaused(t, p, pause)
	tx := filepath.Join(x.state, "tx", "sparse")
	wantSparse(t, "the staged file", filepath.Join(x.stagedPath("sparse"), "img"), after)
	wantSparse(t, "the frozen object", oneFile(t, "frozen object", filepath.Join(tx, "changes", "objects", "*")), after)
	wantSparse(t, "the journal's backup", oneFile(t, "journal backup", filepath.Join(tx, "journal", "backup", "*")), before)
	wantSparse(t, "the base's file after the apply", img, after)
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1"})
	wantSparse(t, "the base's file after the commit", img, after)
	wantSparse(t, "the original kept for undo", oneFile(t, "original", filepath.Join(x.state, "bases", "*", "originals", "objects", "*")), before)

	r = x.exec(run{args: []string{"undo", "sparse", "--workdir", x.base}, timeout: sparseTimeout})
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1"})
	wantSparse(t, "the base's file after undo", img, before)
}
