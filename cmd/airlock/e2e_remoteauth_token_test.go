package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// A token in the remote's URL, as `git clone https://user:TOKEN@host/...`
// leaves it in the clone's .git/config: the landing authenticates with it,
// yet it is on no command line of airlock's git or of the processes git
// starts (a git wrapper first on PATH logs every argv, and GIT_TRACE every
// command git runs: its remote helper gets the URL on its command line),
// nowhere in airlock's state or the staged tree while the landing runs
// (its validator looks), and masked in what airlock prints.
func TestE2ERemoteTokenURLStaysSecret(t *testing.T) {
	const token = "ghsTOKENSECRET42"
	srv := startAuthHTTP(t, "x-access-token", token, "")
	srv.seed(t, "t.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "t.git")
	url := strings.Replace(srv.url("t.git"), "http://", "http://x-access-token:"+token+"@", 1)
	hst := newAuthHost(t, srv, "t.git", url)
	realGit := testbin.Require(t, "git", "the wrapper runs the real git")

	logs := testbin.RealDir(t)
	argv, trace := filepath.Join(logs, "argv"), filepath.Join(logs, "trace")
	bin := filepath.Join(logs, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %s\nGIT_TRACE=%s exec %s \"$@\"\n", argv, trace, realGit)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}

	id := hst.open(map[string]string{"b.txt": "b\n"})
	found := filepath.Join(logs, "found")
	check := fmt.Sprintf("! grep -rl %s %s %s > %s", token[:6]+"''"+token[6:], hst.state, hst.stagedPath(id), found)
	r := hst.run(env, "land", "-q", "--remote", "origin", "--branch", "main", "--validate", check, id)
	if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
		t.Fatalf("land with a token in the URL: want landed\n%s\nfound the token in: %s", r, testbin.ReadFile(t, found))
	}
	for _, args := range [][]string{{"log", "--remote", "origin", "--branch", "main"}, {"receipt", "verify", "--remote", "origin", "--branch", "main"}} {
		r := hst.run(env, args...)
		if r.Code != 0 {
			t.Errorf("%q: %s", args, r)
		}
		if strings.Contains(r.Stdout+r.Stderr, token) {
			t.Errorf("%q printed the token:\n%s", args, r)
		}
	}
	// The token added by a global url.<base>.insteadOf, as CI jobs write
	// it: the landing's git reads the global config too, and must not
	// rewrite the URL again after the token was taken out.
	plain := srv.url("t.git")
	global := filepath.Join(logs, "gitconfig")
	testbin.WriteFiles(t, logs, map[string]string{"gitconfig": fmt.Sprintf("[url %q]\n\tinsteadOf = %s\n", strings.TrimSuffix(url, "t.git"), strings.TrimSuffix(plain, "t.git"))})
	gitIn(t, hst.clone, "remote", "set-url", "origin", plain)
	id = hst.open(map[string]string{"g.txt": "g\n"})
	r = hst.run(append(env, "GIT_CONFIG_GLOBAL="+global), "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 0 || len(landed(t, bare, "main")[id]) != 1 {
		t.Errorf("a token from a global insteadOf: want landed\n%s", r)
	}
	// A wrong token is refused, and the refusal does not show it.
	bad := strings.Replace(url, token, "ghsWRONGTOKEN7", 1)
	gitIn(t, hst.clone, "remote", "set-url", "origin", bad)
	id = hst.open(map[string]string{"c.txt": "c\n"})
	r = hst.run(env, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 125 || strings.Contains(r.Stdout+r.Stderr, "ghsWRONGTOKEN7") {
		t.Errorf("a wrong token: want exit 125 without the token shown\n%s", r)
	}

	for _, f := range []string{argv, trace} {
		if strings.Contains(testbin.ReadFile(t, f), token) {
			t.Errorf("the token is on a command line (%s):\n%s", filepath.Base(f), testbin.ReadFile(t, f))
		}
	}
	// Not vacuous: the trace saw git start its remote helper.
	if !strings.Contains(testbin.ReadFile(t, trace), "remote-http") {
		t.Errorf("GIT_TRACE saw no remote helper: the command lines were not recorded\n%s", testbin.ReadFile(t, trace))
	}
}
