package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EGitMetadata: git works in the staged tree, but a commit never
// writes the base's .git: the command's git commit stays behind, its file
// edit lands.
func TestE2EGitMetadata(t *testing.T) {
	testbin.Require(t, "git", "the test runs git in the staged tree")
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n"), "b.txt": F(0o644, "b\n")})
	git := func(args ...string) string {
		t.Helper()
		return x.sh(x.base, nil, "git", args...)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "initial")
	head := git("rev-parse", "HEAD")
	isGit := func(rel string) bool { return rel == ".git" || strings.HasPrefix(rel, ".git/") }
	skipGit := isGit
	skipOthers := func(rel string) bool { return !isGit(rel) }
	gitBefore := snapshot(t, x.base, skipOthers)
	if len(gitBefore) < 5 {
		t.Fatalf("the .git snapshot has only %d entries", len(gitBefore))
	}
	before := snapshot(t, x.base, skipGit)

	r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c",
		`set -e; printf 'a edited\n' > a.txt; git add -A; git commit -q -m 'from the agent'; git log --oneline | wc -l`)
	wantCode(t, r, 0)
	if strings.TrimSpace(r.Stdout) != "2" {
		t.Errorf("git in the staged tree saw %q commits, want 2", r.Stdout)
	}
	wantBlock(t, r, map[string]string{"outcome": "committed", "added": "0", "modified": "1", "deleted": "0"})
	want := before
	want["a.txt"] = F(0o644, "a edited\n")
	wantTree(t, "base outside .git", want, snapshot(t, x.base, skipGit))
	// The agent's commit is kept on airlock/<id>: the base's .git gains
	// objects and that one ref (with its reflog), and nothing else in it
	// changes — no FETCH_HEAD, no other ref, no file of the change set.
	gitAfter := snapshot(t, x.base, skipOthers)
	for rel := range gitAfter {
		if _, ok := gitBefore[rel]; ok {
			continue
		}
		for _, p := range []string{".git/objects/", ".git/refs/heads/airlock", ".git/logs/refs/heads/airlock"} {
			if strings.HasPrefix(rel, p) {
				delete(gitAfter, rel)
			}
		}
	}
	wantTree(t, "base .git, less the kept commit's objects and branch", gitBefore, gitAfter)
	if r.Settle["branch"] == "" || git("log", "-1", "--format=%s", r.Settle["branch"]) != "from the agent\n" {
		t.Errorf("the agent's commit is not kept on the settle's branch %q", r.Settle["branch"])
	}
	if got := git("rev-parse", "HEAD"); got != head {
		t.Errorf("base HEAD moved from %s to %s", head, got)
	}
	if st := git("status", "--porcelain"); strings.TrimSpace(st) != "M a.txt" {
		t.Errorf("git status in the base: %q, want a.txt modified", st)
	}
	if !testbin.Exists(filepath.Join(x.base, ".git", "HEAD")) {
		t.Errorf("the base lost .git/HEAD")
	}
}
