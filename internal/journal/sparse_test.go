package journal

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/testbin"
)

const sparseSize = 16 << 20

// writeAt writes s at off in the file p, creating it.
func writeAt(t *testing.T, p string, off int64, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
	must(t, err)
	_, err = f.WriteAt([]byte(s), off)
	must(t, err)
	must(t, f.Close())
}

// wantSparse fails unless p holds the bytes of the file like and takes at
// most 1 MiB of disk (its data is a few bytes; dense, it is 16 MiB).
func wantSparse(t *testing.T, what, p, like string) {
	t.Helper()
	a, err := os.ReadFile(p)
	must(t, err)
	b, err := os.ReadFile(like)
	must(t, err)
	if !bytes.Equal(a, b) {
		t.Errorf("%s %s: not the bytes of %s", what, p, like)
	}
	var st syscall.Stat_t
	must(t, syscall.Stat(p, &st))
	if st.Blocks*512 > 1<<20 {
		t.Errorf("%s %s takes %d KiB of disk for a few bytes of data: its holes were filled", what, p, st.Blocks/2)
	}
}

// TestSparseFilesStaySparse freezes, backs up, applies and restores an
// edit of a 16 MiB sparse file, and saves what another process wrote to it
// after the apply: the frozen object, the backup, the applied file, the
// displaced copy and the restored file each hold their exact bytes and
// their holes.
func TestSparseFilesStaySparse(t *testing.T) {
	tmp := t.TempDir()
	p := &plan{pristine: filepath.Join(tmp, "pristine"), staged: filepath.Join(tmp, "staged"), objects: filepath.Join(tmp, "objects")}
	must(t, os.Mkdir(p.pristine, 0o755))
	img := filepath.Join(p.pristine, "img")
	writeAt(t, img, 0, "head")
	writeAt(t, img, sparseSize/2, "middle")
	must(t, os.Truncate(img, sparseSize))
	cpA(t, p.pristine, p.staged)
	var st syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(p.staged, "img"), &st))
	if st.Blocks*512 > 1<<20 {
		testbin.Missing(t, "cp -a made a dense copy of a sparse file (%d KiB): this file system keeps no holes", st.Blocks/2)
	}
	open := walk(t, p.staged)
	// The edit grows the file by a hole and a few bytes: a change its
	// size shows, whatever the clock's granularity.
	staged := filepath.Join(p.staged, "img")
	writeAt(t, staged, sparseSize+(1<<20), "tail")
	set, err := changeset.Diff(context.Background(), changeset.Input{Base: walk(t, p.pristine), StagedOpen: open, Staged: walk(t, p.staged), BaseDir: p.pristine, StagedDir: p.staged})
	must(t, err)
	must(t, changeset.Freeze(context.Background(), set, p.staged, p.objects))
	if len(set.Changes) != 1 {
		t.Fatalf("changes %+v, want img modified", set.Changes)
	}
	p.set = set
	wantSparse(t, "the frozen object", changeset.ObjectPath(p.objects, set.Changes[0].Result.Digest), staged)

	b := p.newBase(t)
	j := p.prepare(t, b)
	wantSparse(t, "the backup", BackupPath(b.jdir, j.Ops[0]), img)
	_, err = Apply(context.Background(), b.root, j, p.objects)
	must(t, err)
	applied := filepath.Join(b.dir, "img")
	wantSparse(t, "the applied file", applied, staged)

	// Another process writes into the applied file before a restore: what
	// it wrote is saved aside, holes and all, then the backup goes back.
	writeAt(t, applied, 3<<20, "foreign")
	foreign := filepath.Join(tmp, "foreign")
	cpA(t, applied, foreign)
	rr := restore(t, b, j)
	if len(rr.Displaced) != 1 || !strings.HasPrefix(rr.Displaced[0], "img -> ") {
		t.Fatalf("Displaced = %q, want img", rr.Displaced)
	}
	wantSparse(t, "the displaced copy", strings.TrimPrefix(rr.Displaced[0], "img -> "), foreign)
	wantSparse(t, "the restored file", applied, img)
}
