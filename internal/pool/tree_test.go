package pool

// The test trees of internal/stage's tests, for the refresh tests here.

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/stage/stagetest"
)

// The test trees are stagetest's, shared with the staging tests.
var (
	skipExcluded = stagetest.SkipExcluded
	buildTree    = stagetest.BuildTree
	setMtime     = stagetest.SetMtime
	facts        = stagetest.Facts
)

type fact = stagetest.Fact

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// stageDir returns a path for a staged workspace that is removed with the
// copy backend's Remove when the test ends (t.TempDir alone cannot remove
// read-only directories unless run as root).
func stageDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "staged")
	t.Cleanup(func() {
		b, err := stage.Get(stage.Copy)
		if err == nil {
			err = b.Remove(context.Background(), dir)
		}
		if err != nil {
			t.Error(err)
		}
	})
	return dir
}

// copyStage stages req with the copy backend.
func copyStage(t *testing.T, req stage.Request) (*stage.Result, error) {
	t.Helper()
	b, err := stage.Get(stage.Copy)
	if err != nil {
		return nil, fmt.Errorf("the copy backend: %w", err)
	}
	return b.Stage(t.Context(), req)
}
