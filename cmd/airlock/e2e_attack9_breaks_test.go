//go:build airlock_known_breaks

package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// attack9's breaks: each test fails today, and is compiled only with the
// build tag airlock_known_breaks
// (go test -tags 'airlock_faults airlock_known_breaks' -run KnownBreakAttack9 ./cmd/airlock).

// TestKnownBreakAttack9LinkedWorktreeBaseSharesConfig: a base that is a
// linked git worktree (`git worktree add`) has a .git file, not a
// directory. The copy backend copies that file, so the staged tree's git
// is the base's own repository: the agent reads the token in its
// remote's URL (stage.ScrubGitConfig skips a .git that is no directory),
// and its `git config` writes the base's config, which land reads. A
// credential helper it plants there gets the password the user's own
// helper gave (git hands every helper a successful credential to
// `store`), and nothing refuses the transaction as the worktree backend
// does (BoundaryEscape).
func TestKnownBreakAttack9LinkedWorktreeBaseSharesConfig(t *testing.T) {
	const token = "ghsLINKTOKEN21"
	srv := startAuthHTTP(t, "u", token, "")
	srv.seed(t, "l.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "l.git")
	t.Run("the token in the URL", func(t *testing.T) {
		hst := newAuthHost(t, srv, "l.git", strings.Replace(srv.url("l.git"), "http://", "http://u:"+token+"@", 1))
		linked := filepath.Join(filepath.Dir(hst.clone), "linked")
		gitIn(t, hst.clone, "worktree", "add", "-q", "-b", "work", linked)
		hst.clone = linked
		_, staged := a9Open(hst, map[string]string{"b.txt": "b\n"}, "--backend", "copy")
		if out, _ := hst.gitAs(nil, "-C", staged, "config", "remote.origin.url"); strings.Contains(out, token) {
			t.Errorf("git in the staged tree reads the token: %s", out)
		}
	})
	t.Run("a planted helper gets the password", func(t *testing.T) {
		hst := newAuthHost(t, srv, "l.git", srv.url("l.git"))
		dir := testbin.RealDir(t)
		testbin.WriteFiles(t, dir, map[string]string{
			"credentials": strings.Replace(srv.url(""), "http://", "http://u:"+token+"@", 1) + "\n",
			"global":      "[credential]\n\thelper = store --file=" + filepath.Join(dir, "credentials") + "\n",
		})
		global := "GIT_CONFIG_GLOBAL=" + filepath.Join(dir, "global")
		linked := filepath.Join(filepath.Dir(hst.clone), "linked")
		gitIn(t, hst.clone, "worktree", "add", "-q", "-b", "work2", linked)
		hst.clone = linked
		id, staged := a9Open(hst, map[string]string{"c.txt": "c\n"}, "--backend", "copy")
		stolen := filepath.Join(dir, "stolen")
		if out, err := hst.gitAs(nil, "-C", staged, "config", "--add", "credential.helper", "!f() { cat >> "+stolen+"; }; f"); err != nil {
			t.Fatalf("the agent's git config in the staged tree: %v\n%s", err, out)
		}
		r := hst.run([]string{global}, "land", "-q", "--remote", "origin", "--branch", "main", id)
		if testbin.Exists(stolen) {
			t.Errorf("a helper the agent planted through the staged .git file ran at land (exit %d, landed %d) and was given:\n%s", r.Code, len(landed(t, bare, "main")[id]), testbin.ReadFile(t, stolen))
		}
	})
}
