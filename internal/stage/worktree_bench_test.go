package stage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchRepo makes a small project like scripts/gentree's, in proportion:
// a fifth of the files tracked source (committed, the index refreshed
// well after), four fifths an ignored node_modules.
func benchRepo(b *testing.B, files int) string {
	b.Helper()
	repo, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("func f() error { return nil }\n", 100) // 3 KB
	put := func(rel, s string) {
		p := filepath.Join(repo, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	src := files / 5
	for i := range src {
		put(fmt.Sprintf("pkg%d/file%d.go", i%10, i), fmt.Sprintf("package p%d\n%s", i, body))
	}
	put(".gitignore", "node_modules/\n")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "source")
	for i := range files - src {
		put(fmt.Sprintf("node_modules/m%d/lib/f%d.js", i%40, i), fmt.Sprintf("module.exports = %d\n%s", i, body))
	}
	// The user's git status, some time later: the index's stat data is
	// fresh and out of the timestamp window.
	git("update-index", "-q", "--really-refresh")
	return repo
}

// BenchmarkWorktreeStage stages a 1,000-file tree (200 tracked, 800
// ignored in node_modules) with the worktree backend ("airlock"), beside
// what doing it by hand costs: `git worktree add --detach` of the same
// commit plus `cp -a` of the ignored node_modules ("by-hand"). The
// backend's target is the by-hand figure (docs/backends.md).
func BenchmarkWorktreeStage(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	needGitBench(b)
	repo := benchRepo(b, 1000)
	state, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	clock, err := testClock()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("airlock", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			p := filepath.Join(state, "tx", fmt.Sprintf("a%d", n))
			b.StopTimer()
			if err := os.MkdirAll(p, 0o700); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			dir := filepath.Join(p, "staged")
			if _, err := (worktreeBackend{}).Stage(ctx, Request{Base: repo, Dir: dir, StateClock: clock, BaseClock: clock}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := (worktreeBackend{}).Remove(ctx, dir); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("by-hand", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			top := filepath.Join(state, fmt.Sprintf("hand%d", n))
			for _, args := range [][]string{
				{"git", "-C", repo, "worktree", "add", "-q", "--detach", top, "HEAD"},
				{"cp", "-a", filepath.Join(repo, "node_modules"), top},
			} {
				if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			b.StopTimer()
			if out, err := exec.Command("git", "-C", repo, "worktree", "remove", "--force", top).CombinedOutput(); err != nil {
				b.Fatalf("git worktree remove: %v\n%s", err, out)
			}
			b.StartTimer()
		}
	})
}

// needGitBench is needGit for a benchmark: a fixed identity and no user
// or system configuration.
func needGitBench(b *testing.B) {
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Airlock Bench", "GIT_AUTHOR_EMAIL": "bench@airlock.invalid",
		"GIT_COMMITTER_NAME": "Airlock Bench", "GIT_COMMITTER_EMAIL": "bench@airlock.invalid",
	} {
		b.Setenv(k, v)
	}
}
