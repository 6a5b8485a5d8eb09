package main_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// attack9: an outside review of how land --remote authenticates (docs/
// landing.md "Authentication"), as a user, as the agent that writes the
// staged tree, and as a hostile process of the same user. The attacks
// that fail today are in e2e_attack9_breaks_test.go.

// a9Open opens a transaction over the host's clone with extra open
// flags and returns its id and staged tree.
func a9Open(r *remoteHost, files map[string]string, flags ...string) (string, string) {
	r.t.Helper()
	res := r.run(nil, append([]string{"open", "--workdir", r.clone}, flags...)...)
	if res.Code != 0 {
		r.t.Fatalf("open %q: %s", flags, res)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	testbin.WriteFiles(r.t, lines[1], files)
	return lines[0], lines[1]
}

// a9Argv is a git wrapper first on PATH that logs every argv of git and,
// through GIT_TRACE, of every command git starts (its remote helper, a
// credential helper): it returns the PATH entry and the two logs.
func a9Argv(t *testing.T) (env []string, argv, trace string) {
	t.Helper()
	realGit := testbin.Require(t, "git", "the wrapper runs the real git")
	logs := testbin.RealDir(t)
	argv, trace = filepath.Join(logs, "argv"), filepath.Join(logs, "trace")
	bin := filepath.Join(logs, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %s\nGIT_TRACE=%s exec %s \"$@\"\n", argv, trace, realGit)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, argv, trace
}

// a9Marker is a shell command that records that it ran, in a file the
// test reads: the code a hostile configuration plants.
func a9Marker(t *testing.T) (cmd, file string) {
	t.Helper()
	file = filepath.Join(testbin.RealDir(t), "ran")
	return "echo ran >> " + file, file
}

// An agent owns the staged tree, its copy of .git/config included. What
// it plants there (a credential helper, core.sshCommand, an askpass, a
// remote URL of its own, an fsmonitor, a pre-push hook) must not run or
// redirect the landing: land reads the base clone's configuration. The
// remote requires credentials only the base clone has.
func TestE2EAttack9StagedGitConfigPlantsNothing(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "")
	srv.seed(t, "s.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "s.git")
	evil := filepath.Join(srv.root, "evil.git")
	gitIn(t, srv.root, "clone", "-q", "--bare", bare, evil)
	hst := newAuthHost(t, srv, "s.git", strings.Replace(srv.url("s.git"), "http://", "http://u:pw@", 1))
	plant, ran := a9Marker(t)
	id, staged := a9Open(hst, map[string]string{"b.txt": "b\n"}, "--backend", "copy")
	cfg := filepath.Join(staged, ".git", "config")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "[credential]\n\thelper = %q\n[core]\n\tsshCommand = %q\n\taskPass = %q\n\tfsmonitor = %q\n[remote \"origin\"]\n\tpushurl = %s\n[url %q]\n\tinsteadOf = %s\n",
		"!"+plant, plant, plant, plant, srv.url("evil.git"), srv.url("evil.git"), srv.url("s.git"))
	f.Close()
	testbin.WriteFiles(t, staged, map[string]string{".git/hooks/pre-push": "#!/bin/sh\n" + plant + "\n"})
	os.Chmod(filepath.Join(staged, ".git/hooks/pre-push"), 0o755)

	// Not vacuous: git in the staged tree runs the planted helper (the
	// insteadOf sends its fetch to evil.git, whose server asks).
	cmd := exec.Command("git", "fetch", "-q", "origin")
	cmd.Dir, cmd.Env = staged, gitEnv("GIT_TERMINAL_PROMPT=0")
	cmd.Run()
	if !testbin.Exists(ran) {
		t.Fatalf("git fetch in the staged tree did not run the planted credential helper: the plant is inert")
	}
	os.Remove(ran)

	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
		t.Fatalf("land with a planted staged .git/config: want landed into the clone's origin\n%s", r)
	}
	if len(landed(t, evil, "main")[id]) != 0 {
		t.Errorf("the landing pushed to the URL the agent planted")
	}
	if testbin.Exists(ran) {
		t.Errorf("code the agent planted in the staged .git ran at land: %s", testbin.ReadFile(t, ran))
	}
	if strings.Contains(testbin.ReadFile(t, filepath.Join(hst.clone, ".git", "config")), plant) {
		t.Errorf("the staged .git/config reached the base clone's")
	}
}

// The base clone's own code (hooks, core.fsmonitor, a clean/smudge
// filter, an alias) is what the clone's commands run, not a fetch's:
// land, log --remote and receipt verify run none of it.
func TestE2EAttack9CloneHooksAndFiltersDoNotRunAtLand(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "")
	srv.seed(t, "c.git", map[string]string{"a.txt": "a\n", ".gitattributes": "*.txt filter=evil\n"})
	bare := filepath.Join(srv.root, "c.git")
	hst := newAuthHost(t, srv, "c.git", strings.Replace(srv.url("c.git"), "http://", "http://u:pw@", 1))
	plant, ran := a9Marker(t)
	id := hst.open(map[string]string{"b.txt": "b\n"})
	for _, kv := range [][2]string{
		{"core.fsmonitor", plant},
		{"filter.evil.clean", plant + "; cat"},
		{"filter.evil.smudge", plant + "; cat"},
		{"filter.evil.process", plant},
		{"core.hooksPath", filepath.Join(hst.clone, "hooks")},
	} {
		gitIn(t, hst.clone, "config", kv[0], kv[1])
	}
	for _, hook := range []string{"pre-push", "reference-transaction", "post-checkout", "pre-auto-gc"} {
		testbin.WriteFiles(t, hst.clone, map[string]string{"hooks/" + hook: "#!/bin/sh\n" + plant + "\n"})
		os.Chmod(filepath.Join(hst.clone, "hooks", hook), 0o755)
	}
	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
		t.Fatalf("land: want landed\n%s", r)
	}
	for _, args := range [][]string{{"log", "--remote", "origin", "--branch", "main"}, {"receipt", "verify", "--remote", "origin", "--branch", "main"}} {
		if r := hst.run(nil, args...); r.Code != 0 {
			t.Errorf("%q: %s", args, r)
		}
	}
	if testbin.Exists(ran) {
		t.Errorf("the clone's hook, fsmonitor or filter ran during land or log --remote: %s", testbin.ReadFile(t, ran))
	}
}

// A token given on airlock's own command line (--remote URL) is masked in
// what airlock prints and is in none of what the landing pushes (the
// commit, its receipt note) or keeps (the state directory).
func TestE2EAttack9TokenInRemoteFlagNotPushedOrStored(t *testing.T) {
	const token = "ghsFLAGTOKEN99"
	srv := startAuthHTTP(t, "x-access-token", token, "")
	srv.seed(t, "f.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "f.git")
	url := strings.Replace(srv.url("f.git"), "http://", "http://x-access-token:"+token+"@", 1)
	hst := newAuthHost(t, srv, "f.git", srv.url("f.git"))
	id := hst.open(map[string]string{"b.txt": "b\n"})
	r := hst.run(nil, "land", "--remote", url, "--branch", "main", id)
	if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
		t.Fatalf("land --remote URL-with-token: want landed\n%s", r)
	}
	if strings.Contains(r.Stdout+r.Stderr, token) {
		t.Errorf("land printed the token:\n%s", r)
	}
	for _, args := range [][]string{{"log", "--remote", url, "--branch", "main"}, {"receipt", "verify", "--remote", url, "--branch", "main"}, {"log", "--json"}, {"show", id}} {
		r := hst.run(nil, args...)
		if strings.Contains(r.Stdout+r.Stderr, token) {
			t.Errorf("%q printed the token:\n%s", args[:2], r)
		}
	}
	pushed := gitIn(t, bare, "log", "--all", "--format=%B", "-p")
	notes := gitIn(t, bare, "log", "--format=%N", "--notes=airlock", "main")
	if strings.Contains(pushed+notes, token) {
		t.Errorf("the token was pushed (a commit, its receipt note):\n%s\n%s", pushed, notes)
	}
	if out, _ := testbin.Run(t, testbin.Cmd{Bin: "grep", Args: []string{"-rl", token, hst.state}}).Stdout, 0; out != "" {
		t.Errorf("the token is in airlock's state: %s", out)
	}
}

// With the worktree backend the agent's `git config` writes the base's
// own repository configuration (docs/backends.md says so). A credential
// helper it plants there must not run when land --remote asks the
// server: land refuses the transaction (BoundaryEscape) before it talks
// to the remote.
func TestE2EAttack9WorktreePlantedHelperRefusedBeforeFetch(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "")
	srv.seed(t, "w.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "w.git")
	hst := newAuthHost(t, srv, "w.git", srv.url("w.git"))
	plant, ran := a9Marker(t)
	id, staged := a9Open(hst, map[string]string{"b.txt": "b\n"}, "--backend", "worktree")
	gitIn(t, staged, "config", "credential.helper", fmt.Sprintf("!f() { %s; printf 'username=u\\npassword=pw\\n'; }; f", plant))
	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if !strings.Contains(gitIn(t, hst.clone, "config", "--get-all", "credential.helper"), plant) {
		t.Fatalf("the plant did not reach the base's config: the attack is inert")
	}
	if r.Code != 75 || !strings.Contains(r.Stdout, "BoundaryEscape") {
		t.Errorf("land after the agent changed the shared config: want refused (BoundaryEscape)\n%s", r)
	}
	if testbin.Exists(ran) {
		t.Errorf("a credential helper the agent planted ran at land (exit %d, landed %d)\n%s", r.Code, len(landed(t, bare, "main")[id]), r)
	}
}

// A staged tree opened after a discard pooled the last one (copy
// backend: it may be recycled, its .git/config refreshed from the base)
// is scrubbed too: the token the clone's URL got after the tree was
// pooled is not in the new tree.
func TestE2EAttack9RecycledTreeScrubbed(t *testing.T) {
	const token = "ghsPOOLTOKEN77"
	srv := startAuthHTTP(t, "u", token, "")
	srv.seed(t, "r.git", map[string]string{"a.txt": "a\n"})
	hst := newAuthHost(t, srv, "r.git", srv.url("r.git"))
	id, _ := a9Open(hst, nil, "--backend", "copy")
	if r := hst.run(nil, "discard", id); r.Code != 0 {
		t.Fatalf("discard: %s", r)
	}
	gitIn(t, hst.clone, "remote", "set-url", "origin", strings.Replace(srv.url("r.git"), "http://", "http://u:"+token+"@", 1))
	id, staged := a9Open(hst, map[string]string{"b.txt": "b\n"}, "--backend", "copy")
	if found := testbin.Run(t, testbin.Cmd{Bin: "grep", Args: []string{"-rl", token, staged}}); found.Stdout != "" {
		t.Errorf("the token is in the recycled staged tree: %s", found.Stdout)
	}
	if r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id); r.Code != 0 {
		t.Errorf("land: %s", r)
	}
}

// Where `git fetch` and `git push` of the remote work in the clone, land
// works too, each time checked against git itself in the clone first: a
// remote whose name has dots and a slash, a password whose '@', ':' and
// '/' are percent-encoded in the URL, credential.useHttpPath, a
// credential helper named by a path relative to the clone, and an
// insteadOf alias (srv:) that pushInsteadOf rewrites to a URL with the
// credentials for pushes.
func TestE2EAttack9WhereGitWorksLandWorks(t *testing.T) {
	const password = "p@ss:w/rd"
	srv := startAuthHTTP(t, "u", password, "")
	srv.seed(t, "o.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "o.git")
	plain := srv.url("o.git")
	withPass := strings.Replace(plain, "http://", "http://u:p%40ss%3Aw%2Frd@", 1)
	for _, c := range []struct {
		name  string
		setup func(h *remoteHost) // the remote is "up.stream/x-1"
	}{
		{"percent-encoded password", func(h *remoteHost) {
			gitIn(t, h.clone, "remote", "add", "up.stream/x-1", withPass)
		}},
		{"credential.useHttpPath", func(h *remoteHost) {
			gitIn(t, h.clone, "remote", "add", "up.stream/x-1", withPass)
			gitIn(t, h.clone, "config", "credential.useHttpPath", "true")
		}},
		{"helper path relative to the clone", func(h *remoteHost) {
			testbin.WriteFiles(t, h.clone, map[string]string{".git/helper.sh": "#!/bin/sh\ntest \"$1\" = get && printf 'username=u\\npassword=%s\\n' '" + password + "'\n"})
			os.Chmod(filepath.Join(h.clone, ".git/helper.sh"), 0o755)
			gitIn(t, h.clone, "remote", "add", "up.stream/x-1", plain)
			gitIn(t, h.clone, "config", "credential.helper", "!.git/helper.sh")
		}},
		{"pushInsteadOf adds the credentials", func(h *remoteHost) {
			testbin.WriteFiles(t, h.clone, map[string]string{".git/helper.sh": "#!/bin/sh\ntest \"$1\" = get && printf 'username=u\\npassword=%s\\n' '" + password + "'\n"})
			os.Chmod(filepath.Join(h.clone, ".git/helper.sh"), 0o755)
			gitIn(t, h.clone, "remote", "add", "up.stream/x-1", "srv:o.git")
			gitIn(t, h.clone, "config", "url."+strings.TrimSuffix(plain, "o.git")+".insteadOf", "srv:")
			gitIn(t, h.clone, "config", "url."+strings.TrimSuffix(withPass, "o.git")+".pushInsteadOf", "srv:")
			gitIn(t, h.clone, "config", "credential.helper", "!.git/helper.sh")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hst := newAuthHost(t, srv, "o.git", plain)
			c.setup(hst)
			if out, err := hst.gitAs(nil, "fetch", "-q", "up.stream/x-1"); err != nil {
				t.Fatalf("git fetch up.stream/x-1 in the clone fails, no oracle: %v\n%s", err, out)
			}
			if out, err := hst.gitAs(nil, "push", "-q", "--dry-run", "up.stream/x-1", "HEAD:refs/heads/probe"); err != nil {
				t.Fatalf("git push up.stream/x-1 in the clone fails, no oracle: %v\n%s", err, out)
			}
			id := hst.open(map[string]string{strings.ReplaceAll(c.name, " ", "-") + ".txt": "x\n"})
			r := hst.run(nil, "land", "-q", "--remote", "up.stream/x-1", "--branch", "main", id)
			if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
				t.Fatalf("land --remote up.stream/x-1: want landed, as git fetch and push do\n%s", r)
			}
			if strings.Contains(r.Stdout+r.Stderr, password) {
				t.Errorf("land printed the password:\n%s", r)
			}
		})
	}
}

// Where the clone's push URL would fail `git push`, land fails with
// git's reason, and does not land through the fetch URL instead.
func TestE2EAttack9BrokenPushURLFailsLikeGit(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "")
	srv.seed(t, "q.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "q.git")
	hst := newAuthHost(t, srv, "q.git", strings.Replace(srv.url("q.git"), "http://", "http://u:pw@", 1))
	gitIn(t, hst.clone, "remote", "set-url", "--push", "origin", strings.Replace(srv.url("nothere.git"), "http://", "http://u:pw@", 1))
	if _, err := hst.gitAs(nil, "push", "-q", "origin", "HEAD:refs/heads/probe"); err == nil {
		t.Fatalf("git push origin in the clone works: no oracle")
	}
	id := hst.open(map[string]string{"b.txt": "b\n"})
	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 125 || len(landed(t, bare, "main")[id]) != 0 {
		t.Errorf("land with a push URL git cannot push to: want exit 125, nothing landed\n%s", r)
	}
	if !strings.Contains(r.Stdout+r.Stderr, "nothere.git") || strings.Contains(r.Stdout+r.Stderr, "u:pw@") {
		t.Errorf("land's refusal should name the push URL git failed on, without its password\n%s", r)
	}
}

// The validator runs the agent's code (its tests) in the candidate tree
// while the landing holds the clone's credentials: the candidate holds
// no .git to read them from, and neither the validator's environment nor
// its parent's (where GIT_CONFIG_COUNT and the helper's password live
// for git) gives them away.
func TestE2EAttack9ValidatorAtLandSeesNoCredential(t *testing.T) {
	const token = "ghsVALIDTOKEN31"
	srv := startAuthHTTP(t, "u", token, "")
	srv.seed(t, "v.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "v.git")
	hst := newAuthHost(t, srv, "v.git", strings.Replace(srv.url("v.git"), "http://", "http://u:"+token+"@", 1))
	gitIn(t, hst.clone, "config", "http.extraheader", "X-Probe: hdrVALIDTOKEN31")
	out := filepath.Join(testbin.RealDir(t), "seen")
	// What an agent's test could read: the tree, git's view from it, its
	// own and its parent's environment.
	v := fmt.Sprintf("{ echo ran; env; cat -v /proc/$PPID/environ; grep -r . .; git config --list --show-origin; } > %s 2>&1; true", out)
	id := hst.open(map[string]string{"b.txt": "b\n"})
	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", "--validate", v, id)
	if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
		t.Fatalf("land: want landed\n%s", r)
	}
	seen := testbin.ReadFile(t, out)
	if !strings.HasPrefix(seen, "ran\n") {
		t.Fatalf("the validator did not run:\n%s", seen)
	}
	if strings.Contains(seen, "VALIDTOKEN31") {
		t.Errorf("the validator could read a credential:\n%s", seen)
	}
}

// An IPv6 literal with a port, and a token in the URL: the credential
// context airlock derives (http://[::1]:PORT) must match the host git
// asks about. The server is the authenticating one behind a proxy on
// [::1].
func TestE2EAttack9IPv6LiteralWithToken(t *testing.T) {
	const token = "ghsV6TOKEN13"
	srv := startAuthHTTP(t, "u", token, "")
	srv.seed(t, "six.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "six.git")
	target, err := neturl.Parse(srv.url(""))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		testbin.Missing(t, "an IPv6 loopback address (::1) to serve on: %v", err)
	}
	proxy := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target)}
	go proxy.Serve(ln)
	t.Cleanup(func() { proxy.Close() })
	url := "http://u:" + token + "@" + ln.Addr().String() + "/six.git"
	hst := newAuthHost(t, srv, "six.git", url)
	if out, err := hst.gitAs(nil, "fetch", "-q", "origin"); err != nil {
		t.Fatalf("git fetch origin over [::1] fails in the clone, no oracle: %v\n%s", err, out)
	}
	env, argv, trace := a9Argv(t)
	id := hst.open(map[string]string{"b.txt": "b\n"})
	r := hst.run(env, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
		t.Fatalf("land over [::1]: want landed, as git fetch does\n%s", r)
	}
	for _, f := range []string{argv, trace} {
		if strings.Contains(testbin.ReadFile(t, f), token) {
			t.Errorf("the token is on a command line (%s)", filepath.Base(f))
		}
	}
}

// A token given as a URL's user alone (https://TOKEN@host/...) where the
// server wants a password too: the landing fails as `git fetch` does,
// and git's reason, which names the URL with its user ("could not read
// Password for 'http://TOKEN@...'"), is masked in what airlock prints and
// keeps.
func TestE2EAttack9UserOnlyTokenMaskedInGitsReason(t *testing.T) {
	const token = "ghsUSERTOKEN64"
	srv := startAuthHTTP(t, token, "x-oauth", "")
	srv.seed(t, "n.git", map[string]string{"a.txt": "a\n"})
	hst := newAuthHost(t, srv, "n.git", strings.Replace(srv.url("n.git"), "http://", "http://"+token+"@", 1))
	out, err := hst.gitAs([]string{"GIT_TERMINAL_PROMPT=0"}, "fetch", "-q", "origin")
	if err == nil || !strings.Contains(out, token) {
		t.Fatalf("git fetch origin: want it to fail naming the URL with its user, as the oracle of what must be masked\n%s", out)
	}
	id := hst.open(map[string]string{"b.txt": "b\n"})
	r := hst.run(nil, "land", "--remote", "origin", "--branch", "main", id)
	if r.Code != 125 || !strings.Contains(r.Stdout, "Password") {
		t.Errorf("land: want exit 125 with git's reason\n%s", r)
	}
	if strings.Contains(r.Stdout+r.Stderr, token) {
		t.Errorf("land printed the token:\n%s", r)
	}
	if found := testbin.Run(t, testbin.Cmd{Bin: "grep", Args: []string{"-rl", token, hst.state}}); found.Stdout != "" {
		t.Errorf("the token is in airlock's state: %s", found.Stdout)
	}
}

// TestE2EAttack9AskpassFromEnvironmentNotRun: a desktop session sets
// SSH_ASKPASS (or the user GIT_ASKPASS); over http, a remote that asks
// for credentials the clone does not have must not make the landing's
// git run that program, a window that waits for someone to answer.
// GIT_TERMINAL_PROMPT=0 stops git's terminal prompt only: git asks an
// askpass program first (prompt.c), so airlock sets GIT_ASKPASS empty.
// The test's askpass records that it ran and refuses, so the landing
// ends either way.
func TestE2EAttack9AskpassFromEnvironmentNotRun(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "")
	srv.seed(t, "k.git", map[string]string{"a.txt": "a\n"})
	hst := newAuthHost(t, srv, "k.git", srv.url("k.git"))
	for _, v := range []string{"SSH_ASKPASS", "GIT_ASKPASS"} {
		t.Run(v, func(t *testing.T) {
			dir := testbin.RealDir(t)
			asked := filepath.Join(dir, "asked")
			testbin.WriteFiles(t, dir, map[string]string{"askpass": "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + asked + "\nexit 1\n"})
			os.Chmod(filepath.Join(dir, "askpass"), 0o755)
			id := hst.open(map[string]string{"b.txt": "b\n"})
			r := hst.run([]string{v + "=" + filepath.Join(dir, "askpass")}, "land", "-q", "--remote", "origin", "--branch", "main", id)
			if r.Code != 125 {
				t.Errorf("land without credentials: want exit 125\n%s", r)
			}
			if testbin.Exists(asked) {
				t.Errorf("land ran %s, which would wait for an answer: it asked %q", v, testbin.ReadFile(t, asked))
			}
		})
	}
}

// TestE2EAttack9CredentialHelperGetsNoTerminal: land run from a person's
// shell must not hand its controlling terminal to the clone's credential
// helper, where a helper that asks (as a password manager's helper does
// when it has no window) would wait for an answer no one gives: each
// remote git call runs in a session of its own. The test's helper records
// whether it could open /dev/tty, and answers nothing, so the landing ends
// either way.
func TestE2EAttack9CredentialHelperGetsNoTerminal(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "")
	srv.seed(t, "y.git", map[string]string{"a.txt": "a\n"})
	hst := newAuthHost(t, srv, "y.git", srv.url("y.git"))
	dir := testbin.RealDir(t)
	tty := filepath.Join(dir, "tty")
	gitIn(t, hst.clone, "config", "credential.helper", fmt.Sprintf("!f() { if (exec 3</dev/tty) 2>/dev/null; then echo could-prompt >> %s; fi; }; f", tty))
	id := hst.open(map[string]string{"b.txt": "b\n"})
	out, code := hst.landOnTerminal(t, nil, id)
	if code != 125 {
		t.Errorf("land without credentials: want exit 125, got %d\n%s", code, out)
	}
	if testbin.Exists(tty) {
		t.Errorf("the credential helper could open the terminal land runs on, where a prompt waits forever")
	}
}

// TestE2EAttack9TokenGoCannotParse: a password git accepts in a URL but
// Go's net/url refuses (a '^', or a '%' not followed by two hex digits,
// which git keeps as it is) is taken out of the URL as git would read it
// (internal/remoteurl): the staged copy of .git/config holds none, git's
// remote helper does not get it on its command line, and the landing
// works as `git fetch origin` in the clone does.
func TestE2EAttack9TokenGoCannotParse(t *testing.T) {
	for _, c := range []struct{ name, inURL, password string }{
		{"caret", "ghs^SECRET42", "ghs^SECRET42"},
		{"bare percent", "ghs%SECRET42", "ghs%SECRET42"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := startAuthHTTP(t, "u", c.password, "")
			srv.seed(t, "p.git", map[string]string{"a.txt": "a\n"})
			bare := filepath.Join(srv.root, "p.git")
			url := strings.Replace(srv.url("p.git"), "http://", "http://u:"+c.inURL+"@", 1)
			hst := newAuthHost(t, srv, "p.git", url)
			if out, err := hst.gitAs(nil, "fetch", "-q", "origin"); err != nil {
				t.Fatalf("git fetch origin in the clone fails, no oracle: %v\n%s", err, out)
			}
			env, argv, trace := a9Argv(t)
			id, staged := a9Open(hst, map[string]string{"b.txt": "b\n"})
			if strings.Contains(testbin.ReadFile(t, filepath.Join(staged, ".git", "config")), "SECRET42") {
				t.Errorf("the staged .git/config holds the password:\n%s", testbin.ReadFile(t, filepath.Join(staged, ".git", "config")))
			}
			r := hst.run(env, "land", "-q", "--remote", "origin", "--branch", "main", id)
			if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
				t.Errorf("land: want landed, as git fetch origin in the clone works\n%s", r)
			}
			if strings.Contains(r.Stdout+r.Stderr, "SECRET42") {
				t.Errorf("land printed the password:\n%s", r)
			}
			for _, f := range []string{argv, trace} {
				if strings.Contains(testbin.ReadFile(t, f), "SECRET42") {
					t.Errorf("the password is on a command line (%s)", filepath.Base(f))
				}
			}
			// The same URL given as --remote: masked in what land says
			// and keeps.
			id = hst.open(map[string]string{"c.txt": "c\n"})
			r = hst.run(nil, "land", "--remote", url, "--branch", "main", id)
			if r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, "SECRET42") {
				t.Errorf("land --remote URL: want landed, the password masked\n%s", r)
			}
			if found := testbin.Run(t, testbin.Cmd{Bin: "grep", Args: []string{"-rl", "SECRET42", hst.state}}); found.Stdout != "" {
				t.Errorf("the password is in airlock's state: %s", found.Stdout)
			}
		})
	}
}

// TestE2EAttack9UnparsableRemoteFlagMasked: --remote with a password git
// accepts but Go's net/url refuses (a '^') is masked in the refusal as
// any other password: landing.Redact splits the URL as git does.
func TestE2EAttack9UnparsableRemoteFlagMasked(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "")
	srv.seed(t, "m.git", map[string]string{"a.txt": "a\n"})
	hst := newAuthHost(t, srv, "m.git", srv.url("m.git"))
	id := hst.open(map[string]string{"b.txt": "b\n"})
	r := hst.run(nil, "land", "--remote", strings.Replace(srv.url("m.git"), "http://", "http://u:bad^SECRET42@", 1), "--branch", "main", id)
	if r.Code != 125 {
		t.Errorf("land with a wrong password: want exit 125\n%s", r)
	}
	if strings.Contains(r.Stdout+r.Stderr, "SECRET42") {
		t.Errorf("land printed the password:\n%s", r)
	}
}

// TestE2EAttack9EnvironmentConfigAuthenticates: a CI job (or a wrapper)
// that gives git its auth header through GIT_CONFIG_COUNT (or `git -c`,
// GIT_CONFIG_PARAMETERS, inherited by child processes) makes `git fetch
// origin` in the clone work, and land too: the landing reads the access
// settings those variables set, as the user's git does, though airlock's
// other git calls drop them (internal/git environ.go). What they set that
// is no access setting is not passed on, and a failed fetch names it
// instead of telling the user to check a `git fetch` that works.
func TestE2EAttack9EnvironmentConfigAuthenticates(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "ciTOKEN")
	srv.seed(t, "e.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "e.git")
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"GIT_CONFIG_COUNT", []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=Authorization: Bearer ciTOKEN"}},
		{"GIT_CONFIG_PARAMETERS", []string{"GIT_CONFIG_PARAMETERS='http.extraheader'='Authorization: Bearer ciTOKEN'"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hst := newAuthHost(t, srv, "e.git", srv.url("e.git"))
			if out, err := hst.gitAs(c.env, "fetch", "-q", "origin"); err != nil {
				t.Fatalf("git fetch origin in the clone fails, no oracle: %v\n%s", err, out)
			}
			id := hst.open(map[string]string{c.name + ".txt": "e\n"})
			r := hst.run(c.env, "land", "-q", "--remote", "origin", "--branch", "main", id)
			if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
				t.Errorf("land where git fetch origin works: want landed\n%s", r)
			}
		})
	}
	// A rewrite is no access setting: `git fetch origin` works through
	// it, land does not, and says which key it left out.
	t.Run("a key it does not pass on", func(t *testing.T) {
		hst := newAuthHost(t, srv, "e.git", "http://nowhere.invalid/e.git")
		env := []string{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=Authorization: Bearer ciTOKEN",
			"GIT_CONFIG_KEY_1=url." + srv.url("") + ".insteadOf", "GIT_CONFIG_VALUE_1=http://nowhere.invalid/"}
		if out, err := hst.gitAs(env, "fetch", "-q", "origin"); err != nil {
			t.Fatalf("git fetch origin in the clone fails, no oracle: %v\n%s", err, out)
		}
		id := hst.open(map[string]string{"rewrite.txt": "e\n"})
		r := hst.run(env, "land", "-q", "--remote", "origin", "--branch", "main", id)
		if said := r.Stdout + r.Stderr; r.Code != 125 || !strings.Contains(said, "sets url."+srv.url("")+".insteadof, which airlock does not pass on") {
			t.Errorf("land: want exit 125 naming the environment's rewrite it left out\n%s", r)
		}
		if strings.Contains(r.Stdout+r.Stderr, "ciTOKEN") {
			t.Errorf("land printed the environment's token:\n%s", r)
		}
	})
}

// TestE2EAttack9CredentialsBesideGitConfigScrubbed: a clone may keep its
// credentials in another file of its .git than config: one its config
// includes (a CI job writing its auth header apart), credential-store's
// file, the config.worktree that extensions.worktreeConfig adds, the
// reflog of a `git pull` given a URL with a token (git logs the pull's
// command line). The copy backend's staged tree holds none of them
// (stage.ScrubGit), and land authenticates from the clone's own.
func TestE2EAttack9CredentialsBesideGitConfigScrubbed(t *testing.T) {
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

// TestE2EAttack9LinkedWorktreePlantedHelperRefused: a base that is a
// linked git worktree (`git worktree add`) has a .git file, not a
// directory; the copy backend copies that file, so git in the staged tree
// works on the base's own repository, as a worktree transaction's does. A
// credential helper the agent plants in its config through it would get
// the password the user's own helper gave (git hands every helper a
// successful credential to `store`): the transaction is guarded as a
// worktree one is (repoguard), and land refuses it (BoundaryEscape)
// before any fetch.
func TestE2EAttack9LinkedWorktreePlantedHelperRefused(t *testing.T) {
	const token = "ghsLINKTOKEN21"
	srv := startAuthHTTP(t, "u", token, "")
	srv.seed(t, "l.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "l.git")
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
	if r.Code != 75 || !strings.Contains(r.Stdout, "BoundaryEscape") || len(landed(t, bare, "main")[id]) != 0 {
		t.Errorf("land after the agent changed the base's config through the staged .git file: want refused (BoundaryEscape), nothing landed\n%s", r)
	}
	if testbin.Exists(stolen) {
		t.Errorf("a helper the agent planted through the staged .git file ran at land (exit %d, landed %d) and was given:\n%s", r.Code, len(landed(t, bare, "main")[id]), testbin.ReadFile(t, stolen))
	}
}
