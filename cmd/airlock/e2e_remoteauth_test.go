package main_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// These scenarios land as `git fetch origin` in the clone would: over
// ssh, which must never wait at a prompt, and with the clone's own
// authentication (a deploy key in core.sshCommand, http.extraheader, a
// credential helper, a token in the remote's URL), which must reach git
// without reaching airlock's state, a staged tree or a command line.

// newAuthHost is a host whose clone's origin is url: cloned from the bare
// repository's path (the test's git has none of the host's credentials),
// then pointed at url.
func newAuthHost(t *testing.T, srv *gitServer, name, url string) *remoteHost {
	t.Helper()
	x := newH(t)
	clone := filepath.Join(x.base, "clone")
	gitIn(t, x.base, "clone", "-q", filepath.Join(srv.root, name), clone)
	gitIn(t, clone, "remote", "set-url", "origin", url)
	return &remoteHost{h: x, clone: clone}
}

// gitAs runs git in dir with the host's environment and extra, as the
// user would by hand: the oracle of what `land` must match.
func (r *remoteHost) gitAs(extra []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = r.clone, r.environ(extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// landOnTerminal lands id into main from the host's clone with a
// terminal of its own, where no one answers a prompt.
func (r *remoteHost) landOnTerminal(t *testing.T, env []string, id string) (string, int) {
	t.Helper()
	cmd := exec.Command(airlockBin, "land", "-q", "--remote", "origin", "--branch", "main", id)
	cmd.Dir, cmd.Env = r.clone, r.environ(env...)
	out, err := onControllingTerminal(cmd, 45*time.Second)
	if err != nil {
		t.Fatalf("land %s on a terminal: %v (it waits at a prompt no one answers)\n%s", id, err, out)
	}
	return out, cmd.ProcessState.ExitCode()
}

func withPath(bin string, extra ...string) []string {
	// No agent: a key the test did not offer must not get in.
	return append([]string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "SSH_AUTH_SOCK="}, extra...)
}

// Over ssh, with a terminal: an unknown host key and a key with a
// passphrase refuse at once with ssh's reason and what to do, where ssh
// would wait at its prompt; a user's own GIT_SSH_COMMAND that is not in
// batch mode runs as it is (an askpass program answers the passphrase);
// and a deploy key the clone names in core.sshCommand lands as `git fetch
// origin` in the clone fetches.
func TestE2ERemoteSSHNeverPrompts(t *testing.T) {
	srv := startSSHD(t)
	srv.seed(t, "s.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "s.git")
	url := srv.url("s.git")
	head := gitIn(t, bare, "rev-parse", "main")

	for _, c := range []struct {
		name, known, identity string
		said, advice          string
	}{
		{"an unknown host key", "", sshPlainKey, "Host key verification failed", "known_hosts"},
		{"a key with a passphrase", "known", sshPassKey, "Permission denied (publickey", "ssh-agent"},
	} {
		hst := newAuthHost(t, srv.gitServer, "s.git", url)
		bin := srv.client(t, c.known != "", c.identity)
		id := hst.open(map[string]string{"b.txt": "b\n"})
		start := time.Now()
		out, code := hst.landOnTerminal(t, withPath(bin), id)
		if code != 125 || !strings.Contains(out, c.said) || !strings.Contains(out, c.advice) || !strings.Contains(out, "batch mode") {
			t.Errorf("%s: want exit 125 with ssh's %q and advice naming %s, got exit %d after %s:\n%s", c.name, c.said, c.advice, code, time.Since(start), out)
		}
		if h := gitIn(t, bare, "rev-parse", "main"); h != head {
			t.Errorf("%s: main moved to %s", c.name, h)
		}
	}

	// The user's own ssh command, not in batch mode, is theirs to run:
	// ssh asks its askpass program for the passphrase.
	hst := newAuthHost(t, srv.gitServer, "s.git", url)
	bin := srv.client(t, true, sshPassKey)
	asked := filepath.Join(testbin.RealDir(t), "asked")
	askpass := filepath.Join(testbin.RealDir(t), "askpass")
	if err := os.WriteFile(askpass, []byte(fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %s\necho '%s'\n", asked, sshPassphrase)), 0o755); err != nil {
		t.Fatal(err)
	}
	id := hst.open(map[string]string{"c.txt": "c\n"})
	out, code := hst.landOnTerminal(t, withPath(bin, "GIT_SSH_COMMAND=ssh -o BatchMode=no", "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force"), id)
	if code != 0 || len(landed(t, bare, "main")[id]) != 1 {
		t.Errorf("GIT_SSH_COMMAND not in batch mode, a passphrase from askpass: want landed, got exit %d:\n%s", code, out)
	}
	if !strings.Contains(testbin.ReadFile(t, asked), "passphrase") {
		t.Errorf("ssh did not ask askpass for the passphrase: %q", testbin.ReadFile(t, asked))
	}

	// A deploy key in the clone's core.sshCommand: without it the clone
	// cannot fetch (no key offered), with it both fetch and land work.
	hst = newAuthHost(t, srv.gitServer, "s.git", url)
	bin = srv.client(t, true, "")
	env := withPath(bin)
	id = hst.open(map[string]string{"d.txt": "d\n"})
	if out, err := hst.gitAs(env, "fetch", "origin"); err == nil {
		t.Fatalf("git fetch origin without the deploy key worked: the test's ssh offers a key it should not\n%s", out)
	}
	gitIn(t, hst.clone, "config", "core.sshCommand", "ssh -i "+filepath.Join(srv.dir, sshDeployKey)+" -o IdentitiesOnly=yes")
	if out, err := hst.gitAs(env, "fetch", "origin"); err != nil {
		t.Fatalf("git fetch origin with the deploy key: %v\n%s", err, out)
	}
	r := hst.run(env, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
		t.Errorf("core.sshCommand with a deploy key: want landed\n%s", r)
	}
	if r := hst.run(env, "receipt", "verify", "--remote", "origin", "--branch", "main"); r.Code != 0 {
		t.Errorf("receipt verify --remote with the deploy key:\n%s", r)
	}
}

// Over smart HTTP behind an auth check: what a CI checkout writes
// (http.extraheader, plain or scoped to the server's URL) and a credential
// helper in the clone's .git/config authenticate land as they do `git
// fetch origin`; without them the server refuses both.
func TestE2ERemoteHTTPCloneAuth(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "tok")
	srv.seed(t, "h.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "h.git")
	url := srv.url("h.git")
	creds := filepath.Join(testbin.RealDir(t), "credentials")
	testbin.WriteFiles(t, filepath.Dir(creds), map[string]string{"credentials": strings.Replace(url, "http://", "http://u:pw@", 1) + "\n"})
	basic := base64.StdEncoding.EncodeToString([]byte("u:pw"))

	header := "AUTHORIZATION: basic " + basic
	for _, c := range []struct {
		name string
		// setup configures the host's clone and returns the
		// environment of both git fetch and land.
		setup func(h *remoteHost) []string
	}{
		{"no credentials", nil},
		{"http.extraheader", func(h *remoteHost) []string {
			gitIn(t, h.clone, "config", "http.extraheader", header)
			return nil
		}},
		{"url-scoped http.extraheader", func(h *remoteHost) []string {
			gitIn(t, h.clone, "config", "http."+strings.TrimSuffix(url, "h.git")+".extraheader", "Authorization: Bearer tok")
			return nil
		}},
		{"credential.helper", func(h *remoteHost) []string {
			gitIn(t, h.clone, "config", "credential.helper", "store --file="+creds)
			return nil
		}},
		{"a global includeIf of the clone's path", func(h *remoteHost) []string {
			// The landing's own repository is elsewhere: the include
			// matches the clone only.
			dir := testbin.RealDir(t)
			testbin.WriteFiles(t, dir, map[string]string{
				"auth":   "[http]\n\textraheader = " + header + "\n",
				"global": fmt.Sprintf("[includeIf %q]\n\tpath = %s\n", "gitdir:"+h.clone+"/", filepath.Join(dir, "auth")),
			})
			return []string{"GIT_CONFIG_GLOBAL=" + filepath.Join(dir, "global")}
		}},
	} {
		hst := newAuthHost(t, srv, "h.git", url)
		var env []string
		if c.setup != nil {
			env = c.setup(hst)
		}
		id := hst.open(map[string]string{"b.txt": c.name + "\n"})
		_, ferr := hst.gitAs(env, "fetch", "origin")
		r := hst.run(env, "land", "-q", "--remote", "origin", "--branch", "main", id)
		if c.setup == nil {
			if ferr == nil || r.Code != 125 || !strings.Contains(r.Stdout, "terminal prompts disabled") {
				t.Errorf("%s: want git fetch and land refused, got fetch error %v and\n%s", c.name, ferr, r)
			}
			continue
		}
		if ferr != nil {
			t.Fatalf("%s: git fetch origin in the clone: %v", c.name, ferr)
		}
		if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
			t.Errorf("%s: want landed as git fetch origin fetches\n%s", c.name, r)
		}
	}
}
