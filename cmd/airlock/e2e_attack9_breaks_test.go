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

// TestKnownBreakAttack9CredentialsBesideGitConfig: the scrub rewrites
// .git/config alone, but a clone may keep its credentials in another file
// of its .git: one its config includes (a CI job writing its auth header
// apart), credential-store's file, the config.worktree that
// extensions.worktreeConfig adds, the reflog of a `git pull` given a URL
// with a token (git logs the pull's command line). The copy backend
// copies that file into the staged tree, where the agent reads it.
func TestKnownBreakAttack9CredentialsBesideGitConfig(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pwSECRET42", "bearerSECRET42")
	srv.seed(t, "i.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "i.git")
	for _, c := range []struct {
		name  string
		setup func(h *remoteHost)
	}{
		{"include.path", func(h *remoteHost) {
			testbin.WriteFiles(t, h.clone, map[string]string{".git/auth.inc": "[http]\n\textraheader = Authorization: Bearer bearerSECRET42\n"})
			gitIn(t, h.clone, "config", "include.path", "auth.inc")
		}},
		{"credential-store in .git", func(h *remoteHost) {
			testbin.WriteFiles(t, h.clone, map[string]string{".git/credentials": strings.Replace(srv.url(""), "http://", "http://u:pwSECRET42@", 1) + "\n"})
			gitIn(t, h.clone, "config", "credential.helper", "store --file=.git/credentials")
		}},
		{"config.worktree", func(h *remoteHost) {
			gitIn(t, h.clone, "config", "extensions.worktreeConfig", "true")
			gitIn(t, h.clone, "config", "--worktree", "http.extraheader", "Authorization: Bearer bearerSECRET42")
		}},
		{"a pull's reflog", func(h *remoteHost) {
			// `git pull URL` logs its command line in .git/logs (a
			// refspec makes the ref update whatever the clone has).
			gitIn(t, h.clone, "pull", "-q", strings.Replace(srv.url("i.git"), "http://", "http://u:pwSECRET42@", 1), "main:pulled")
			gitIn(t, h.clone, "config", "credential.helper", "store --file="+filepath.Join(h.home, "credentials"))
			testbin.WriteFiles(t, h.home, map[string]string{"credentials": strings.Replace(srv.url(""), "http://", "http://u:pwSECRET42@", 1) + "\n"})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hst := newAuthHost(t, srv, "i.git", srv.url("i.git"))
			c.setup(hst)
			if out, err := hst.gitAs(nil, "fetch", "-q", "origin"); err != nil {
				t.Fatalf("git fetch origin in the clone fails, no oracle: %v\n%s", err, out)
			}
			id, staged := a9Open(hst, map[string]string{c.name + ".txt": "b\n"}, "--backend", "copy")
			found := testbin.Run(t, testbin.Cmd{Bin: "grep", Args: []string{"-rl", "SECRET42", staged}})
			if found.Stdout != "" {
				t.Errorf("a credential is in the staged tree: %s", found.Stdout)
			}
			r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id)
			if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
				t.Errorf("land: want landed\n%s", r)
			}
		})
	}
}

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
