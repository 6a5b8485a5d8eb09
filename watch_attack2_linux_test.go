package airlock_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock"
)

// TestWatchAttack2WriteBeforeRun: a watched run keeps every path its
// watch did not name as Open measured it ("where airlock opened the tree
// in this process, the manifest it measured at open is the tree as the
// command finds it"). Through the library that is not so: the caller
// works in tx.Path() between Store.Open and Tx.Run, as the package's
// example does before Commit. The watch starts only when the command
// does, so the caller's write is named by nothing, and the run settles
// no_changes with it dropped. A walk (AIRLOCK_NO_WATCH=1) commits it.
func TestWatchAttack2WriteBeforeRun(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			if walk {
				t.Setenv(airlock.NoWatchEnv, "1")
			} else if os.Getenv(airlock.NoWatchEnv) == "1" {
				t.Skip("the suite runs with the watch off")
			}
			base := filepath.Join(t.TempDir(), "base")
			if err := os.MkdirAll(base, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(base, "a"), []byte("orig\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			base, err := filepath.EvalSymlinks(base)
			if err != nil {
				t.Fatal(err)
			}
			st, err := airlock.OpenStore(filepath.Join(t.TempDir(), "state"))
			if err != nil {
				t.Fatal(err)
			}
			tx, err := st.Open(t.Context(), airlock.OpenOptions{Base: base})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tx.Path(), "NOTES"), []byte("seeded\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := tx.Run(t.Context(), airlock.RunOptions{Argv: []string{"true"}, Env: []string{"PATH=" + os.Getenv("PATH")}})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !walk && !res.Watched {
				t.Skipf("the run was not watched here: %s", res.Unwatched)
			}
			b, _ := os.ReadFile(filepath.Join(base, "NOTES"))
			if res.Settled.Outcome != airlock.Committed || string(b) != "seeded\n" {
				t.Errorf("a run after the caller wrote NOTES in its workspace (watched %v, unwatched %q): outcome %s +%d, base NOTES %q; want it committed as a walk does",
					res.Watched, res.Unwatched, res.Settled.Outcome, res.Settled.Added, b)
			}
		})
	}
}
