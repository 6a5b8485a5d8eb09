package pool

import (
	"bytes"
	"github.com/airlockdev/airlock/internal/stage/stagetest"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/stage"
)

// The sparse helpers are stagetest's.
var (
	sparseImage = stagetest.SparseImage
	allocated   = stagetest.Allocated
	sameSparse  = stagetest.SameSparse
)

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
