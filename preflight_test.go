package airlock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestCheckAgreesWithCommit: for every refusal a test can reach in-process,
// Check and the Commit that follows it refuse with the same kind, the same
// paths and the same reason, and both froze the same change set; where
// Check finds nothing, Commit goes through. (StagedChanged needs the
// freeze paused between two files, which only a fault point in another
// process can do: cmd/airlock's tests cover it.)
func TestCheckAgreesWithCommit(t *testing.T) {
	ctx := context.Background()
	lines := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	// commitOther commits another transaction over the same base that
	// rewrites f: the base drifts, and f's content at open is kept among
	// the originals, so that f can be merged.
	commitOther := func(t *testing.T, s *Store, tx *Tx) {
		t.Helper()
		other, err := s.Open(ctx, OpenOptions{Base: tx.Base()})
		must(t, err)
		writeTree(t, other.Path(), map[string]string{"f": strings.Replace(lines, "6\n", "6 by the other\n", 1)})
		_, err = other.Commit(ctx, CommitOptions{})
		must(t, err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, s *Store, tx *Tx) // after open
		o     CommitOptions
		want  RefusalKind // "" for none
		out   Outcome     // the commit's outcome where there is no refusal
	}{
		{name: "a plain change commits", out: Committed, setup: func(t *testing.T, _ *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{"new": "n", "dir/b": "b2"})
		}},
		{name: "no change has nothing to commit", out: NoChanges, setup: func(*testing.T, *Store, *Tx) {}},
		{name: "a drift that merges commits", out: Committed, setup: func(t *testing.T, s *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{"f": strings.Replace(lines, "11\n", "11 by this one\n", 1)})
			commitOther(t, s, tx)
		}},
		{name: "an unsupported entry", want: UnsupportedEntry, setup: func(t *testing.T, _ *Store, tx *Tx) {
			must(t, syscall.Mkfifo(filepath.Join(tx.Path(), "pipe"), 0o644))
		}},
		{name: "a protected path", want: ProtectedPathNotApproved, setup: func(t *testing.T, _ *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{".envrc": "export X=1\n", "new": "n"})
		}},
		{name: "a boundary escape", want: BoundaryEscape, setup: func(t *testing.T, _ *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{"dir/new": "n"})
			must(t, os.RemoveAll(filepath.Join(tx.Base(), "dir")))
			must(t, os.Symlink(t.TempDir(), filepath.Join(tx.Base(), "dir")))
		}},
		{name: "a base drift", want: BaseDrift, setup: func(t *testing.T, _ *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{"dir/b": "mine"})
			writeTree(t, tx.Base(), map[string]string{"dir/b": "theirs"})
		}},
		{name: "a base replaced by another directory", want: BaseDrift, setup: func(t *testing.T, _ *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{"new": "n"})
			must(t, os.Rename(tx.Base(), tx.Base()+".moved"))
			must(t, os.Mkdir(tx.Base(), 0o755))
		}},
		{name: "a merge conflict", want: MergeConflict, setup: func(t *testing.T, s *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{"f": strings.Replace(lines, "6\n", "6 by this one\n", 1)})
			commitOther(t, s, tx)
		}},
		{name: "a failed validation", want: ValidationFailed, o: CommitOptions{Validate: "test ! -e bad || { echo found bad; exit 3; }"}, setup: func(t *testing.T, _ *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{"bad": "b"})
		}},
		{name: "another transaction's apply interrupted", want: InterruptedApply, setup: func(t *testing.T, s *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{"new": "n"})
			other, err := s.Open(ctx, OpenOptions{Base: tx.Base()})
			must(t, err)
			b, err := s.st().Base(tx.Base())
			must(t, err)
			must(t, b.SetInflight(other.ID()))
		}},
		{name: "this transaction's apply interrupted", want: InterruptedApply, setup: func(t *testing.T, _ *Store, tx *Tx) {
			writeTree(t, tx.Path(), map[string]string{"new": "n"})
			must(t, tx.event(eventApplying, map[string]any{"ops": 1}))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			tx, err := s.Open(ctx, OpenOptions{Base: newBaseDir(t, map[string]string{"f": lines, "dir/b": "b"})})
			must(t, err)
			c.setup(t, s, tx)

			checked, err := tx.Check(ctx, c.o)
			must(t, err)
			res, err := tx.Commit(ctx, c.o)
			var committed *Refusal
			if err != nil && !errors.As(err, &committed) {
				t.Fatalf("Commit: %v", err)
			}
			if c.want == "" {
				if checked != nil || committed != nil {
					t.Fatalf("Check refused %v, Commit refused %v; want neither to", checked, committed)
				}
				if res.Outcome != c.out {
					t.Fatalf("Commit said %s, want %s", res.Outcome, c.out)
				}
				return
			}
			if checked == nil || committed == nil || checked.Kind != c.want || committed.Kind != c.want {
				t.Fatalf("Check refused %v, Commit refused %v; want both to refuse %s", checked, committed, c.want)
			}
			if !slices.Equal(checked.Paths, committed.Paths) {
				t.Errorf("Check refused paths %q, Commit %q", checked.Paths, committed.Paths)
			}
			// The one difference: a check keeps its validator's output
			// apart from the commit's.
			if why := strings.ReplaceAll(checked.Reason, "check."+validateLog, validateLog); why != committed.Reason {
				t.Errorf("Check's reason %q\nCommit's reason %q", checked.Reason, committed.Reason)
			}
			if res == nil {
				return // nothing was settled: this transaction must be recovered first
			}
			if d := lastChecked(t, tx)["diff_digest"]; d != res.Receipt.DiffDigest {
				t.Errorf("Check froze the change set %v, Commit %v", d, res.Receipt.DiffDigest)
			}
		})
	}
}
