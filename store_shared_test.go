package airlock

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestStoreSharedByConcurrentOpens: one Store, as the MCP server holds it,
// serves calls from several goroutines at once, the first of which
// create its state root. Every open gets a transaction of its own, and
// `go test -race` finds no race on the state root (scripts/stress.sh runs
// it so).
func TestStoreSharedByConcurrentOpens(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base")
	must(t, os.Mkdir(base, 0o755))
	must(t, os.WriteFile(filepath.Join(base, "f"), []byte("f\n"), 0o644))
	s := newStore(t) // its state root does not exist yet
	const n = 6
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tx, err := s.Open(t.Context(), OpenOptions{Base: base, Backend: "copy"})
			if err != nil {
				errs[i] = err
				return
			}
			ids[i] = tx.ID()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
	}
	listed, err := s.IDs()
	must(t, err)
	slices.Sort(ids)
	slices.Sort(listed)
	if !slices.Equal(slices.Compact(slices.Clone(ids)), ids) || !slices.Equal(listed, ids) {
		t.Fatalf("opened %v, the state root lists %v", ids, listed)
	}
}
