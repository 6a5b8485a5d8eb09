//go:build airlock_known_breaks

package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// attack9's breaks: each test fails today, and is compiled only with the
// build tag airlock_known_breaks
// (go test -tags 'airlock_faults airlock_known_breaks' -run KnownBreakAttack9 ./cmd/airlock).

// TestKnownBreakAttack9LinkedWorktreeTokenReadable: a base that is a
// linked git worktree (`git worktree add`) has a .git file, not a
// directory. The copy backend copies that file, so the staged tree's git
// is the base's own repository: the agent reads the token in its remote's
// URL. Left as it is, and documented (docs/backends.md, docs/landing.md
// "Authentication"): the staged tree shares that repository as a worktree
// transaction's does; what it changes there is refused
// (TestE2EAttack9LinkedWorktreePlantedHelperRefused). Keep the token in a
// credential helper, not in the URL, for such a base.
func TestKnownBreakAttack9LinkedWorktreeTokenReadable(t *testing.T) {
	const token = "ghsLINKTOKEN21"
	srv := startAuthHTTP(t, "u", token, "")
	srv.seed(t, "l.git", map[string]string{"a.txt": "a\n"})
	hst := newAuthHost(t, srv, "l.git", strings.Replace(srv.url("l.git"), "http://", "http://u:"+token+"@", 1))
	linked := filepath.Join(filepath.Dir(hst.clone), "linked")
	gitIn(t, hst.clone, "worktree", "add", "-q", "-b", "work", linked)
	hst.clone = linked
	_, staged := a9Open(hst, map[string]string{"b.txt": "b\n"}, "--backend", "copy")
	if out, _ := hst.gitAs(nil, "-C", staged, "config", "remote.origin.url"); strings.Contains(out, token) {
		t.Errorf("git in the staged tree reads the token: %s", out)
	}
}
