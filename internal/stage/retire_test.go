package stage

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRetire(t *testing.T) {
	base := buildTree(t)
	dir := stageDir(t)
	_, err := copyBackend{}.Stage(t.Context(), Request{Base: base, Dir: dir, Skip: skipExcluded})
	must(t, err)
	before := facts(t, base, nil)
	must(t, Retire(t.Context(), copyBackend{}, dir))
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("staged path still there after Retire: %v", err)
	}
	// The detached removal finishes on its own.
	deadline := time.Now().Add(time.Minute)
	for {
		m, _ := filepath.Glob(dir + ".trash*")
		if len(m) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not removed in the background", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after := facts(t, base, nil); len(after) != len(before) {
		t.Fatalf("Retire changed the base: %d paths, had %d", len(after), len(before))
	}
	must(t, Retire(t.Context(), copyBackend{}, dir)) // retiring a retired tree is no error
}
