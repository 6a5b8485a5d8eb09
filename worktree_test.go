package airlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// gitRepo skips without git, pins git's identity and configuration for
// the test, and makes a committed repository with a dirty working tree.
func gitRepo(t *testing.T) (string, func(dir string, args ...string) string) {
	t.Helper()
	testbin.Require(t, "git", "the worktree backend runs it")
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Airlock Test", "GIT_AUTHOR_EMAIL": "test@airlock.invalid",
		"GIT_COMMITTER_NAME": "Airlock Test", "GIT_COMMITTER_EMAIL": "test@airlock.invalid",
	} {
		t.Setenv(k, v)
	}
	g := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	base, err := filepath.EvalSymlinks(newBaseDir(t, map[string]string{"a.txt": "a\n", "src/b.txt": "b\n", ".gitignore": ".env\n"}))
	must(t, err)
	g(base, "init", "-q", "-b", "main")
	g(base, "add", "-A")
	g(base, "commit", "-q", "-m", "initial")
	writeTree(t, base, map[string]string{"a.txt": "a\nedited\n", "untracked.txt": "u\n", ".env": "SECRET=1\n"})
	return base, g
}

// TestWorktreeConcurrentOpens opens 8 worktree transactions over one
// repository from 8 goroutines at once, then settles them at once.
func TestWorktreeConcurrentOpens(t *testing.T) {
	base, g := gitRepo(t)
	ctx := context.Background()
	s := newStore(t)
	const n = 8
	txs := make([]*Tx, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			txs[i], errs[i] = s.Open(ctx, OpenOptions{Base: base, Backend: "worktree", ID: fmt.Sprintf("g%d", i)})
		})
	}
	wg.Wait()
	must(t, errors.Join(errs...))
	if got := strings.Count(g(base, "worktree", "list", "--porcelain"), "worktree "); got != n+1 {
		t.Fatalf("%d worktrees registered, want %d", got, n+1)
	}
	want := g(base, "status", "--porcelain")
	for i, tx := range txs {
		if got := g(tx.Path(), "status", "--porcelain"); got != want {
			t.Errorf("git status in %s:\n%s\nwant:\n%s", tx.Path(), got, want)
		}
		b, err := tx.Branch(ctx)
		must(t, err)
		if b == nil || b.Name != fmt.Sprintf("airlock/g%d", i) || b.Kept {
			t.Errorf("Branch = %+v", b)
		}
	}
	// Half of them commit a change (one file each), half are discarded.
	for i, tx := range txs {
		if i%2 == 0 {
			writeTree(t, tx.Path(), map[string]string{fmt.Sprintf("new%d.txt", i): "new\n"})
		}
	}
	for i, tx := range txs {
		wg.Go(func() {
			if i%2 == 0 {
				_, errs[i] = tx.Commit(ctx, CommitOptions{})
			} else {
				_, errs[i] = tx.Discard(ctx, DiscardOptions{})
			}
		})
	}
	wg.Wait()
	must(t, errors.Join(errs...))
	for i := 0; i < n; i += 2 {
		if _, err := os.Stat(filepath.Join(base, fmt.Sprintf("new%d.txt", i))); err != nil {
			t.Errorf("commit %d did not land: %v", i, err)
		}
	}
	if got := strings.Count(g(base, "worktree", "list", "--porcelain"), "worktree "); got != 1 {
		t.Errorf("%d worktrees left after settling", got)
	}
	if got := g(base, "branch", "--list", "airlock/*"); got != "" {
		t.Errorf("branches left after settling:\n%s", got)
	}
	// gc finds nothing of airlock's left in the repository.
	items, _, err := s.GC(ctx, GCOptions{})
	must(t, err)
	for _, it := range items {
		if strings.Contains(it.Reason, "git worktree") {
			t.Errorf("gc: %+v", it)
		}
	}
}

// TestWorktreeGCSweepsSettledLeftovers: a settled transaction whose
// worktree removal did not happen (here: its staged workspace removed
// behind airlock's back) still has a registration; gc removes it.
func TestWorktreeGCSweepsLeftovers(t *testing.T) {
	base, g := gitRepo(t)
	ctx := context.Background()
	s := newStore(t)
	tx, err := s.Open(ctx, OpenOptions{Base: base, Backend: "worktree", ID: "left"})
	must(t, err)
	// The whole transaction state goes, as a crash of gc itself would
	// leave it; git still lists the worktree.
	must(t, os.RemoveAll(tx.StateDir()))
	if got := strings.Count(g(base, "worktree", "list", "--porcelain"), "worktree "); got != 2 {
		t.Fatalf("%d worktrees registered, want 2", got)
	}
	// Another transaction over the same base tells gc where to look.
	other, err := s.Open(ctx, OpenOptions{Base: base, ID: "other"})
	must(t, err)
	_, err = other.Discard(ctx, DiscardOptions{})
	must(t, err)
	items, _, err := s.GC(ctx, GCOptions{})
	must(t, err)
	found := false
	for _, it := range items {
		if it.ID == "left" && it.Removed && strings.Contains(it.Reason, "git worktree") {
			found = true
		}
	}
	if !found {
		t.Errorf("gc did not report the stale worktree: %+v", items)
	}
	if list := g(base, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees after gc:\n%s", list)
	}
	if got := g(base, "branch", "--list", "airlock/*"); got != "" {
		t.Errorf("branches after gc:\n%s", got)
	}
}
