package stage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The staged copy of a config loses its credentials and nothing else, as
// git itself reads the file before and after.
func TestScrubGitConfig(t *testing.T) {
	testbin.Require(t, "git", "ScrubGitConfig reads the config with git, the oracle here too")
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
	changed, err := ScrubGitConfig(context.Background(), dir)
	if err != nil || !changed {
		t.Fatalf("ScrubGitConfig = %v, %v; want a rewrite", changed, err)
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
	if changed, err := ScrubGitConfig(context.Background(), dir); err != nil || changed {
		t.Errorf("a clean config: ScrubGitConfig = %v, %v; want no rewrite", changed, err)
	}
	if after, _ := os.Stat(cfg); !os.SameFile(before, after) {
		t.Errorf("a clean config was rewritten")
	}
	// A worktree's gitfile shares the base's config: nothing to do.
	wt := t.TempDir()
	testbin.WriteFiles(t, wt, map[string]string{".git": "gitdir: /elsewhere\n"})
	if changed, err := ScrubGitConfig(context.Background(), wt); err != nil || changed {
		t.Errorf("a gitfile: ScrubGitConfig = %v, %v", changed, err)
	}
}
