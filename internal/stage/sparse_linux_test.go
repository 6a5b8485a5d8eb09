package stage

import (
	"github.com/airlockdev/airlock/internal/stage/stagetest"
	"os"
	"path/filepath"
	"testing"
)

// The sparse helpers are stagetest's.
var (
	sparseImage = stagetest.SparseImage
	allocated   = stagetest.Allocated
	sameSparse  = stagetest.SameSparse
)

// TestStageKeepsHoles stages a sparse file with the copy backend and with
// the reflink backend (a clone shares the base's extents, holes included):
// each staged file is the base's, with its holes. (internal/pool's
// TestRefreshKeepsHoles does the same through a refresh.)
func TestStageKeepsHoles(t *testing.T) {
	t.Run("copy", func(t *testing.T) {
		base := t.TempDir()
		sparseImage(t, filepath.Join(base, "img"))
		dir := stageDir(t)
		if _, err := (copyBackend{}).Stage(t.Context(), Request{Base: base, Dir: dir}); err != nil {
			t.Fatal(err)
		}
		sameSparse(t, filepath.Join(base, "img"), filepath.Join(dir, "img"))
	})
	t.Run("reflink", func(t *testing.T) {
		mnt := cloningFS(t)
		base, state := filepath.Join(mnt, "base"), filepath.Join(mnt, "state")
		must(t, os.Mkdir(base, 0o755))
		must(t, os.Mkdir(state, 0o700))
		sparseImage(t, filepath.Join(base, "img"))
		dir := filepath.Join(state, "staged")
		if _, err := (reflinkBackend{}).Stage(t.Context(), Request{Base: base, Dir: dir}); err != nil {
			t.Fatal(err)
		}
		sameSparse(t, filepath.Join(base, "img"), filepath.Join(dir, "img"))
	})
}
