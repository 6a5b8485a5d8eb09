//go:build airlock_faults

package airlock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/changeset"
)

// TestOnePreflight adds a check to the one preflight (testCheck) and sees
// a local commit and a landing into a real bare git remote both refuse by
// it, with nothing applied to the base and nothing pushed; and a check, a
// land and an undo too.
func TestOnePreflight(t *testing.T) {
	clone, g := gitRepo(t)
	g(clone, "commit", "-q", "-am", "edited")
	bare := filepath.Join(t.TempDir(), "remote.git")
	g(clone, "init", "-q", "--bare", "-b", "main", bare)
	g(clone, "push", "-q", bare, "main")
	head := strings.TrimSpace(g(bare, "rev-parse", "main"))

	ctx := context.Background()
	s := newStore(t)
	open := func() *Tx {
		tx, err := s.Open(ctx, OpenOptions{Base: clone})
		must(t, err)
		must(t, os.WriteFile(filepath.Join(tx.Path(), "new.txt"), []byte("new\n"), 0o644))
		return tx
	}
	// A commit made before the check is added, for the undo below.
	done, err := s.Open(ctx, OpenOptions{Base: clone})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(done.Path(), "done.txt"), []byte("done\n"), 0o644))
	if _, err := done.Commit(ctx, CommitOptions{}); err != nil {
		t.Fatal(err)
	}

	ran := 0
	testCheck = func(set *changeset.Set) *Refusal {
		ran++
		return refuse(ValidationFailed, []string{"new.txt"}, "refused by the test's check")
	}
	t.Cleanup(func() { testCheck = nil })
	refusedBy := func(what string, err error) {
		t.Helper()
		var r *Refusal
		if !errors.As(err, &r) || r.Reason != "refused by the test's check" {
			t.Fatalf("%s: %v, want the test check's refusal", what, err)
		}
	}

	res, err := open().Commit(ctx, CommitOptions{})
	refusedBy("commit", err)
	if res == nil || res.Outcome != Refused {
		t.Fatalf("commit: %+v, want refused", res)
	}
	if _, err := os.Lstat(filepath.Join(clone, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("new.txt reached the base of a refused commit (%v)", err)
	}

	l := open().LandRemote(ctx, RemoteOptions{Remote: bare, Branch: "main"})
	refusedBy("land --remote", l.Err)
	if l.Result == nil || l.Result.Outcome != Refused || l.Commit != "" {
		t.Fatalf("land --remote: %+v, want refused with no commit", l)
	}
	if now := strings.TrimSpace(g(bare, "rev-parse", "main")); now != head {
		t.Fatalf("the remote moved from %s to %s under a refused landing", head, now)
	}

	r, err := open().Check(ctx, CommitOptions{})
	must(t, err)
	if r == nil {
		t.Fatal("check: no refusal, want the test check's")
	}
	refusedBy("check", r)
	lands := s.Land(ctx, []string{open().ID()}, CommitOptions{})
	refusedBy("land", lands[0].Err)
	_, err = s.Undo(ctx, UndoOptions{Base: clone, ID: done.ID()})
	refusedBy("undo", err)
	if _, err := os.Lstat(filepath.Join(clone, "done.txt")); err != nil {
		t.Fatalf("done.txt is gone from the base after a refused undo (%v)", err)
	}
	if ran != 5 {
		t.Fatalf("the test's check ran %d times, want once per settle and check", ran)
	}
}
