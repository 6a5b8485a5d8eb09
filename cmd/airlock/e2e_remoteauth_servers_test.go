package main_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The servers the authentication scenarios land into: sshd with its own
// configuration and keys (key-only), and smart HTTP that refuses a request
// without credentials.

// sshServer is an sshd on 127.0.0.1 serving the bare repositories under
// root through plain git-upload-pack and git-receive-pack, for the user
// running the test, with keys only.
type sshServer struct {
	*gitServer
	dir     string // its configuration, host key and the users' keys
	hostKey string // the host's public key, as a known_hosts line needs it
	port    string
}

// The user keys the server accepts: plain, a deploy key, and one with a
// passphrase (sshPassphrase).
const (
	sshPlainKey   = "user_key"
	sshDeployKey  = "deploy_key"
	sshPassKey    = "pass_key"
	sshPassphrase = "correct horse"
)

// startSSHD starts sshd -D -e on a port the kernel chose: a port found
// free may be taken before sshd binds it, so a bind failure starts over
// on another one, and readiness is sshd's own "Server listening" line.
func startSSHD(t *testing.T) *sshServer {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd" // Debian's, off a non-root PATH
		if _, err := os.Stat(sshd); err != nil {
			testbin.Missing(t, "sshd is not installed (Debian's openssh-server: the ssh landing tests run their own)")
		}
	}
	keygen := testbin.Require(t, "ssh-keygen", "the ssh landing tests make their host and user keys")
	testbin.Require(t, "ssh", "the ssh landing tests land over ssh")
	testbin.Require(t, "git", "the ssh landing tests serve git-upload-pack and git-receive-pack over ssh")
	if os.Geteuid() == 0 {
		// sshd run by root separates privileges into this directory;
		// the service makes it at boot, .ci/run where no service runs.
		if _, err := os.Stat("/run/sshd"); err != nil {
			testbin.Missing(t, "/run/sshd, sshd's privilege separation directory, is missing (.ci/run makes it)")
		}
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := testbin.RealDir(t)
	for _, k := range []struct{ name, pass string }{{"host_key", ""}, {sshPlainKey, ""}, {sshDeployKey, ""}, {sshPassKey, sshPassphrase}} {
		if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", k.pass, "-C", k.name, "-f", filepath.Join(dir, k.name)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen %s: %v\n%s", k.name, err, out)
		}
	}
	var auth strings.Builder
	for _, k := range []string{sshPlainKey, sshDeployKey, sshPassKey} {
		auth.WriteString(testbin.ReadFile(t, filepath.Join(dir, k+".pub")))
	}
	testbin.WriteFiles(t, dir, map[string]string{
		"authorized_keys": auth.String(),
		"sshd_config": fmt.Sprintf(`HostKey %[1]s/host_key
AuthorizedKeysFile %[1]s/authorized_keys
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers %[2]s
StrictModes no
UsePAM no
PidFile none
`, dir, me.Username),
	})
	root := testbin.RealDir(t)
	for try := 0; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		cmd := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"), "-o", "ListenAddress=127.0.0.1:"+port)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start sshd: %v", err)
		}
		ready, said := make(chan bool, 1), make(chan string, 1)
		go func() {
			var lines []string
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines = append(lines, sc.Text())
				if strings.Contains(sc.Text(), "Server listening on 127.0.0.1 port "+port) {
					ready <- true
					io.Copy(io.Discard, stderr) // sshd logs each connection here
					return
				}
			}
			said <- strings.Join(lines, "\n")
			ready <- false
		}()
		if <-ready {
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			pub := strings.Fields(testbin.ReadFile(t, filepath.Join(dir, "host_key.pub")))
			s := &sshServer{dir: dir, port: port, hostKey: pub[0] + " " + pub[1]}
			s.gitServer = &gitServer{root: root, url: func(name string) string {
				return "ssh://" + me.Username + "@127.0.0.1:" + port + filepath.Join(root, name)
			}}
			return s
		}
		cmd.Wait()
		msg := <-said
		if try < 10 && strings.Contains(msg, "Bind to port") {
			continue // another process took the port first
		}
		t.Fatalf("sshd did not start:\n%s", msg)
	}
}

// client returns a directory to put first on PATH whose ssh is the
// system's with a configuration of the test's own: known hosts from the
// test's file (holding the server's key when known is set; ssh reads
// ~/.ssh from the password database, not $HOME, so the user's own must be
// kept out) and identity the only key offered by default ("" for none).
func (s *sshServer) client(t *testing.T, known bool, identity string) string {
	t.Helper()
	dir := testbin.RealDir(t)
	ssh := testbin.Require(t, "ssh", "the ssh landing tests land over ssh")
	hosts := ""
	if known {
		hosts = "[127.0.0.1]:" + s.port + " " + s.hostKey + "\n"
	}
	cfg := fmt.Sprintf("UserKnownHostsFile %s/known_hosts\nGlobalKnownHostsFile /dev/null\nIdentitiesOnly yes\n", dir)
	if identity != "" {
		cfg += "IdentityFile " + filepath.Join(s.dir, identity) + "\n"
	} else {
		cfg += "IdentityFile /dev/null\n"
	}
	testbin.WriteFiles(t, dir, map[string]string{
		"known_hosts": hosts,
		"ssh_config":  cfg,
	})
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec %s -F %s/ssh_config \"$@\"\n", ssh, dir)
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// startAuthHTTP serves smart HTTP through git http-backend as CGI, behind
// a check that refuses (401) a request without basic auth as user/password
// or the bearer token.
func startAuthHTTP(t *testing.T, user, password, bearer string) *gitServer {
	t.Helper()
	testbin.Require(t, "git", "the remote landing tests serve repositories with git http-backend")
	root := testbin.RealDir(t)
	cmd := exec.Command("git", "--exec-path")
	cmd.Env = gitEnv()
	execPath, err := cmd.Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		Env: append(gitEnv(), "GIT_PROJECT_ROOT="+root, "GIT_HTTP_EXPORT_ALL=1")}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, basic := r.BasicAuth()
		if !(basic && u == user && p == password) && r.Header.Get("Authorization") != "Bearer "+bearer {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &gitServer{root: root, url: func(name string) string { return srv.URL + "/" + name }}
}

// onControllingTerminal runs cmd as the leader of a session of its own
// whose controlling terminal is a fresh pseudo-terminal, on its stdin,
// stdout and stderr, as in a person's shell: whatever opens /dev/tty (ssh
// asking for a passphrase or about a host key) gets this terminal, where
// no one answers. It returns what the terminal received; a cmd still
// running after limit is killed, with its process group, and reported as
// hung.
func onControllingTerminal(cmd *exec.Cmd, limit time.Duration) (string, error) {
	m, s, err := openPTY()
	if err != nil {
		return "", err
	}
	defer m.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Start()
	s.Close()
	if err != nil {
		return "", err
	}
	hung := make(chan struct{})
	timer := time.AfterFunc(limit, func() {
		close(hung)
		// Its children too (ssh waiting at the prompt): the session's
		// process group, then the terminal itself.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		m.Close()
	})
	defer timer.Stop()
	var out strings.Builder
	io.Copy(&out, m)
	err = cmd.Wait()
	select {
	case <-hung:
		return out.String(), fmt.Errorf("still running after %s, killed: %w", limit, context.DeadlineExceeded)
	default:
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return out.String(), err
	}
	return out.String(), nil
}
