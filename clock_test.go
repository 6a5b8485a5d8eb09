package airlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/testbin"
)

// intoSecond waits until the clock is off into a second it has just
// entered: what follows within the next few hundred milliseconds then
// falls in that one second. The tests check afterwards that it did (the
// stat facts they need equal are), and set up again if it did not.
func intoSecond(off time.Duration) {
	now := time.Now()
	at := now.Truncate(time.Second).Add(off)
	if !at.After(now) {
		at = at.Add(time.Second)
	}
	time.Sleep(time.Until(at))
}

// sameAsOpen reports whether path shows every stat fact that entry rel of
// the transaction's manifest name recorded at open.
func sameAsOpen(t *testing.T, tx *Tx, name, rel, path string) bool {
	t.Helper()
	m, err := tx.loadManifest(name)
	must(t, err)
	open, ok := m.Lookup(rel)
	if !ok {
		t.Fatalf("%s has no %s", name, rel)
	}
	now, err := manifest.Lstat(path)
	must(t, err)
	now.Path = rel
	if !manifest.SameStat(*open, now) {
		t.Logf("%s: %+v at open, %+v now", path, *open, now)
		return false
	}
	return true
}

// TestSameSecondBaseEditIsSeen (issue 18, item 2): on a file system that
// keeps whole seconds, a same-size edit of a base file in the second in
// which open measured it leaves every stat fact as open saw it. The
// commit must see it all the same and refuse (BaseDrift: the base is no
// git repository and airlock kept no original to merge from), never land
// the agent's version over the human's edit. With the state on that file
// system its clock is measured; with the state elsewhere the base's clock
// is assumed coarse.
func TestSameSecondBaseEditIsSeen(t *testing.T) {
	ctx := context.Background()
	for _, where := range []string{"state on the base's file system", "state on another file system"} {
		t.Run(where, func(t *testing.T) {
			mnt := testbin.SecondsFS(t)
			stateDir := filepath.Join(mnt, "state")
			if where == "state on another file system" {
				stateDir = filepath.Join(t.TempDir(), "state")
			}
			s, err := OpenStore(stateDir)
			must(t, err)
			for attempt := 1; ; attempt++ {
				base := filepath.Join(mnt, fmt.Sprintf("base%d", attempt))
				must(t, os.Mkdir(base, 0o755))
				intoSecond(50 * time.Millisecond)
				writeTree(t, base, map[string]string{"f": "human v1\n", "g": "left alone\n"})
				tx, err := s.Open(ctx, OpenOptions{Base: base, Backend: "copy"})
				must(t, err)
				// The human edits f: the same size, in the same second.
				writeTree(t, base, map[string]string{"f": "human v2\n"})
				if !sameAsOpen(t, tx, baseManifestFile, "f", filepath.Join(base, "f")) {
					// The second rolled over before the edit, which the
					// stat then shows: not the case under test.
					_, err := tx.Discard(ctx, DiscardOptions{})
					must(t, err)
					if attempt == 5 {
						t.Fatal("open and an edit did not fit in one second in 5 tries")
					}
					continue
				}
				writeTree(t, tx.Path(), map[string]string{"f": "the agent's version\n"})
				res, err := tx.Commit(ctx, CommitOptions{})
				var r *Refusal
				if !errors.As(err, &r) || r.Kind != BaseDrift {
					outcome := Outcome("")
					if res != nil {
						outcome = res.Outcome
					}
					t.Fatalf("commit over a same-second edit: %s, %v; want a BaseDrift refusal", outcome, err)
				}
				if got := readFile(t, filepath.Join(base, "f")); got != "human v2\n" {
					t.Fatalf("the base's f is %q: the human's edit was lost", got)
				}
				return
			}
		})
	}
}

// TestSameSecondPlantInPooledTreeIsNotKept (issue 18, item 2): with the
// state on a file system that keeps whole seconds, a file of a staged tree
// rewritten in the second it was staged, its mtime kept as cp -p and rsync
// -t keep it, shows every stat fact as staged. A recycled workspace must
// never keep it: the next transaction reads the base's bytes. It is
// planted by the command itself (which also makes it a change of that
// transaction), or after the settling walk (a process the command left).
func TestSameSecondPlantInPooledTreeIsNotKept(t *testing.T) {
	ctx := context.Background()
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	const bytes, planted = "the base's bytes\n", "planted bytes!!!\n" // the same size
	for _, when := range []string{"by the command", "after the settling walk"} {
		t.Run(when, func(t *testing.T) {
			mnt := testbin.SecondsFS(t)
			s, err := OpenStore(filepath.Join(mnt, "state"))
			must(t, err)
			for attempt := 1; ; attempt++ {
				base := filepath.Join(mnt, fmt.Sprintf("base%d", attempt))
				must(t, os.Mkdir(base, 0o755))
				// Far enough into the second that the settling walk is
				// clearly later than the staging.
				intoSecond(100 * time.Millisecond)
				writeTree(t, base, map[string]string{"f": bytes, "g": "other\n"})
				// An mtime long past, as most files of a tree have.
				must(t, os.Chtimes(filepath.Join(base, "f"), old, old))
				tx, err := s.Open(ctx, OpenOptions{Base: base, Backend: "copy"})
				must(t, err)
				plant := func(p string) {
					must(t, os.WriteFile(p, []byte(planted), 0o644))
					must(t, os.Chtimes(p, old, old)) // cp -p keeps the mtime
				}
				at := filepath.Join(tx.Path(), "f")
				inSecond := true
				// Only a run's tree is pooled (its command's processes are
				// known): the command fails, so the run discards.
				run, err := tx.Run(ctx, RunOptions{Argv: []string{"false"}, Ended: func(*RunResult) {
					if when == "by the command" {
						plant(at)
						inSecond = sameAsOpen(t, tx, stagedOpenFile, "f", at)
					}
				}})
				var ce *CommandError
				if !errors.As(err, &ce) {
					t.Fatalf("run: %v, want the command's failure", err)
				}
				res := run.Settled
				if when == "after the settling walk" {
					b, err := s.st().Base(base)
					must(t, err)
					pool, err := b.PoolDir()
					must(t, err)
					at = filepath.Join(pool, tx.ID(), poolTreeDir, "f")
					plant(at)
					inSecond = sameAsOpen(t, tx, stagedOpenFile, "f", at)
				}
				if !inSecond {
					// Not within the second it was staged: the stat shows
					// it, which is not the case under test.
					if attempt == 5 {
						t.Fatal("staging and a rewrite did not fit in one second in 5 tries")
					}
					continue
				}
				if when == "by the command" && res.Modified != 1 {
					t.Errorf("the command's same-second rewrite of f: discarded %d modified, want 1 (it is a change)", res.Modified)
				}
				next, err := s.Open(ctx, OpenOptions{Base: base, Backend: "copy"})
				must(t, err)
				if next.rec.Staging == nil || next.rec.Staging.Recycled == nil {
					t.Fatalf("the next open did not recycle the pooled tree (%+v): the case is not tested", next.rec.Staging)
				}
				if got := readFile(t, filepath.Join(next.Path(), "f")); got != bytes {
					t.Fatalf("the next transaction reads %q in f, not the base's bytes (recycled: %+v)", got, *next.rec.Staging.Recycled)
				}
				_, err = next.Discard(ctx, DiscardOptions{})
				must(t, err)
				return
			}
		})
	}
}
