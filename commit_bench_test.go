package airlock_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock"
)

// newFilesTree writes n small files into dir, twenty to a directory, the
// shape of an `npm install`'s node_modules.
func newFilesTree(b *testing.B, dir string, n int) {
	b.Helper()
	for i := range n {
		sub := filepath.Join(dir, "node_modules", fmt.Sprintf("pkg%03d", i/20))
		if i%20 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		body := fmt.Sprintf("module.exports = %d; // a small file of an installed package\n", i)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%02d.js", i%20)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitNewFiles commits a change set of 5,000 new small files,
// and, for the ratio issue 20 holds it to (commit <= 2x), copies the same
// tree with `cp -a` followed by `sync`. Only the commit, or the copy and
// its sync, is timed: the transaction is opened and its files written
// before the timer runs.
func BenchmarkCommitNewFiles(b *testing.B) {
	const n = 5000
	b.Run("commit", func(b *testing.B) {
		ctx := context.Background()
		for range b.N {
			b.StopTimer()
			top := b.TempDir()
			base, state := filepath.Join(top, "project"), filepath.Join(top, "state")
			if err := os.Mkdir(base, 0o755); err != nil {
				b.Fatal(err)
			}
			st, err := airlock.OpenStore(state)
			if err != nil {
				b.Fatal(err)
			}
			tx, err := st.Open(ctx, airlock.OpenOptions{Base: base, Backend: "copy"})
			if err != nil {
				b.Fatal(err)
			}
			newFilesTree(b, tx.Path(), n)
			exec.Command("sync").Run()
			b.StartTimer()
			res, err := tx.Commit(ctx, airlock.CommitOptions{})
			b.StopTimer()
			if err != nil || res.Outcome != airlock.Committed || res.Added != n {
				b.Fatalf("commit: %v, %+v", err, res)
			}
		}
	})
	b.Run("cp-a+sync", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			top := b.TempDir()
			src := filepath.Join(top, "src")
			newFilesTree(b, src, n)
			exec.Command("sync").Run()
			b.StartTimer()
			if out, err := exec.Command("sh", "-c", `cp -a "$1" "$2" && sync`, "sh", src, filepath.Join(top, "dst")).CombinedOutput(); err != nil {
				b.Fatalf("cp -a: %v\n%s", err, out)
			}
			b.StopTimer()
		}
	})
}
