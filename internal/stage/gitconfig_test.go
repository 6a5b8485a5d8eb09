package stage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/testbin"
)

// The staged copy of a config loses its credentials and nothing else, as
// git itself reads the file before and after.
func TestScrubGitConfig(t *testing.T) {
	testbin.Require(t, "git", "ScrubGit reads the config with git, the oracle here too")
	dir := t.TempDir()
	cfg := filepath.Join(dir, ".git", "config")
	testbin.WriteFiles(t, dir, map[string]string{".git/config": `[core]
	bare = false
	filemode
[remote "origin"]
	url = https://x-access-token:TOKEN1@github.com/o/r.git
	pushurl = https://TOKEN2@github.com/o/r.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[remote "up"]
	url = ssh://git@host/r.git
[remote "caret"]
	url = https://u:TOK^EN6@host/r.git
	pushurl = https://u:TOK%EN7@host/r.git
[remote "scp"]
	url = u:TOKEN8@host:r.git
[http "https://github.com/"]
	extraheader = AUTHORIZATION: basic VE9LRU4z
[http]
	extraHeader = Authorization: Bearer TOKEN4
	sslVerify = true
[url "https://u:TOKEN5@host/"]
	insteadOf = https://host/
[branch "main"]
	remote = origin
	merge = "refs/heads/main ; with \"quotes\""
`})
	list := func() string {
		out, err := exec.Command("git", "config", "--file", cfg, "--list").CombinedOutput()
		if err != nil {
			t.Fatalf("git config --list: %v\n%s", err, out)
		}
		return string(out)
	}
	done, err := ScrubGit(context.Background(), dir, t.TempDir())
	if err != nil || !slices.Equal(done.Rewritten, []string{".git/config"}) || done.Removed != nil {
		t.Fatalf("ScrubGit = %+v, %v; want .git/config rewritten", done, err)
	}
	got := list()
	want := `core.bare=false
core.filemode
remote.origin.url=https://github.com/o/r.git
remote.origin.pushurl=https://github.com/o/r.git
remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*
remote.up.url=ssh://git@host/r.git
remote.caret.url=https://host/r.git
remote.caret.pushurl=https://host/r.git
remote.scp.url=u@host:r.git
http.sslverify=true
url.https://host/.insteadof=https://host/
branch.main.remote=origin
branch.main.merge=refs/heads/main ; with "quotes"
`
	if got != want {
		t.Errorf("scrubbed config reads\n%s\nwant\n%s", got, want)
	}
	for _, s := range []string{"TOKEN", "VE9LRU4z"} {
		if strings.Contains(testbin.ReadFile(t, cfg), s) {
			t.Errorf("the scrubbed config still holds %s", s)
		}
	}
	// Nothing left to take out: the file is not rewritten.
	before, _ := os.Stat(cfg)
	if done, err := ScrubGit(context.Background(), dir, t.TempDir()); err != nil || done.Changed() {
		t.Errorf("a clean config: ScrubGit = %+v, %v; want no rewrite", done, err)
	}
	if after, _ := os.Stat(cfg); !os.SameFile(before, after) {
		t.Errorf("a clean config was rewritten")
	}
	// A worktree's gitfile shares the base's config: nothing to do.
	wt := t.TempDir()
	testbin.WriteFiles(t, wt, map[string]string{".git": "gitdir: /elsewhere\n"})
	if done, err := ScrubGit(context.Background(), wt, t.TempDir()); err != nil || done.Changed() {
		t.Errorf("a gitfile: ScrubGit = %+v, %v", done, err)
	}
}

// Credentials git keeps beside .git/config in the staged copy are taken
// out too: an included file inside .git, config.worktree, a credential
// store a helper names there, a reflog of a pull given a URL with a token.
// What lies outside .git (the user's own files) is not the scrub's.
func TestScrubGitBesideConfig(t *testing.T) {
	testbin.Require(t, "git", "ScrubGit reads the config with git")
	dir, base, outside := t.TempDir(), t.TempDir(), t.TempDir()
	testbin.WriteFiles(t, outside, map[string]string{"inc": "[http]\n\textraheader = Bearer OUTSIDE\n"})
	testbin.WriteFiles(t, dir, map[string]string{
		".git/config": "[include]\n\tpath = auth.inc\n\tpath = " + filepath.Join(outside, "inc") + "\n" +
			"[includeIf \"gitdir:/\"]\n\tpath = nested/more.inc\n" +
			"[credential]\n\thelper = store --file=.git/credentials\n\thelper = store --file " + filepath.Join(base, ".git", "abs-store") + "\n",
		".git/auth.inc":                    "[http]\n\textraheader = Authorization: Bearer TOKEN1\n",
		".git/nested/more.inc":             "[include]\n\tpath = ../deeper.inc\n",
		".git/deeper.inc":                  "[remote \"x\"]\n\turl = https://u:TOK^EN2@h/r.git\n",
		".git/config.worktree":             "[http]\n\textraHeader = Authorization: Bearer TOKEN3\n",
		".git/worktrees/w/config.worktree": "[remote \"y\"]\n\turl = https://TOKEN4@h/r.git\n",
		".git/credentials":                 "https://u:TOKEN5@h\n",
		".git/abs-store":                   "https://u:TOKEN6@h\n",
		".git/logs/HEAD":                   "0 1 A U <a@b> 1 +0000\tpull https://u:TOKEN7@h/r.git main: Fast-forward\n",
		".git/logs/refs/heads/pulled":      "0 1 A U <a@b> 1 +0000\tpull https://u:TOKEN8@h/r.git main:pulled: storing head\n",
		".git/worktrees/w/logs/HEAD":       "0 1 A U <a@b> 1 +0000\tpull https://TOKEN9@h/r.git\n",
		".git/logs/refs/heads/main":        "0 1 A U <a@b> 1 +0000\tcommit (initial): x@y https://h/\n",
	})
	m, err := manifest.Walk(context.Background(), dir, manifest.WalkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done, err := ScrubGit(context.Background(), dir, base)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(done.Rewritten)
	slices.Sort(done.Removed)
	wantRewritten := []string{".git/auth.inc", ".git/config.worktree", ".git/deeper.inc", ".git/logs/HEAD", ".git/logs/refs/heads/pulled", ".git/worktrees/w/config.worktree", ".git/worktrees/w/logs/HEAD"}
	if !slices.Equal(done.Rewritten, wantRewritten) || !slices.Equal(done.Removed, []string{".git/abs-store", ".git/credentials"}) {
		t.Errorf("ScrubGit = %+v\nwant rewritten %q, removed the two stores", done, wantRewritten)
	}
	if found := testbin.Run(t, testbin.Cmd{Bin: "grep", Args: []string{"-rl", "TOK", dir}}); found.Stdout != "" {
		t.Errorf("a credential is left in the staged .git: %s", found.Stdout)
	}
	if got := testbin.ReadFile(t, filepath.Join(dir, ".git/logs/HEAD")); got != "0 1 A U <a@b> 1 +0000\tpull https://h/r.git main: Fast-forward\n" {
		t.Errorf("the reflog reads %q", got)
	}
	if !strings.Contains(testbin.ReadFile(t, filepath.Join(outside, "inc")), "OUTSIDE") {
		t.Errorf("a file outside .git was scrubbed")
	}
	// The manifest now says what is there, so no later diff takes the
	// scrub for the agent's.
	if err := done.Remeasure(m, dir); err != nil {
		t.Fatal(err)
	}
	now, err := manifest.Walk(context.Background(), dir, manifest.WalkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Entries) != len(m.Entries) {
		t.Fatalf("remeasured manifest has %d entries, the tree %d", len(m.Entries), len(now.Entries))
	}
	for i := range now.Entries {
		a, b := m.Entries[i], now.Entries[i]
		if a.Path != b.Path || a.Size != b.Size || a.Kind != b.Kind {
			t.Errorf("remeasured %+v, the tree has %+v", a, b)
		}
	}
}
