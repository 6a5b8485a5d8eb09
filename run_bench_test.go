package airlock_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/airlockdev/airlock"
)

// BenchmarkWarmRun is a warm `airlock run -- true` over a 1,000-file base
// (100 directories of 10 files), the fixed cost issue 20 holds to 50 ms:
// open recycling the pooled tree of the run before, the watch, the ports,
// the contained launch of the command and the settle of its empty change
// set, which pools the tree again. The first run, which copies the base,
// is not timed.
func BenchmarkWarmRun(b *testing.B) {
	base := filepath.Join(b.TempDir(), "base")
	for d := range 100 {
		dir := filepath.Join(base, "src", "pkg"+strconv.Itoa(d/10), "lib"+strconv.Itoa(d%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 10 {
			if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(f)+".go"), []byte("package lib\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	st, err := airlock.OpenStore(filepath.Join(b.TempDir(), "state"))
	if err != nil {
		b.Fatal(err)
	}
	run := func() *airlock.RunResult {
		res, err := st.Run(b.Context(), airlock.OpenOptions{Base: base}, airlock.RunOptions{Argv: []string{"true"}})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	run()
	for b.Loop() {
		res := run()
		if rec := res.Tx.Record(); rec.Staging == nil || rec.Staging.Recycled == nil {
			b.Fatalf("the run did not recycle the pooled tree: %+v", rec.Staging)
		}
	}
}
