package airlock_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/testbin"
)

// BenchmarkPartialCommit commits 10 changed files of a 1,000-file tree:
// "part" as a partial commit of a transaction that changed 20 (the other
// ten stay open), "whole" as a plain commit of a transaction that changed
// those 10 only, its reference. A part pays for reading the whole change
// set to check its selection and for advancing the transaction's record
// of the base; both should stay a fraction of the commit.
func BenchmarkPartialCommit(b *testing.B) {
	for _, name := range []string{"part", "whole"} {
		b.Run(name, func(b *testing.B) {
			base := filepath.Join(b.TempDir(), "base")
			files := map[string]string{}
			for i := range 1000 {
				files[fmt.Sprintf("d%02d/f%03d.txt", i/50, i)] = fmt.Sprintf("file %d\n", i)
			}
			testbin.WriteFiles(b, base, files)
			st, err := airlock.OpenStore(filepath.Join(b.TempDir(), "state"))
			if err != nil {
				b.Fatal(err)
			}
			edited := 10
			if name == "part" {
				edited = 20
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				tx, err := st.Open(b.Context(), airlock.OpenOptions{Base: base})
				if err != nil {
					b.Fatal(err)
				}
				var paths []string
				for k := range edited {
					rel := fmt.Sprintf("d%02d/f%03d.txt", k, k*50)
					if err := os.WriteFile(filepath.Join(tx.Path(), rel), fmt.Appendf(nil, "edit %d of %d\n", i, k), 0o644); err != nil {
						b.Fatal(err)
					}
					if k < 10 {
						paths = append(paths, rel)
					}
				}
				o := airlock.CommitOptions{}
				if name == "part" {
					o.Paths = paths
				}
				b.StartTimer()
				if _, err := tx.Commit(b.Context(), o); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if name == "part" {
					if _, err := tx.Discard(b.Context(), airlock.DiscardOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
		})
	}
}
