package main_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// These scenarios hold a landing against remotes that misbehave on
// 127.0.0.1: a silent listener (accepts, never answers) as a git://,
// http and ssh server, and a proxy in front of git daemon that cuts the
// client off around its push.

// silentServer accepts TCP connections and never answers. accepted
// receives each connection: the client is connected and waiting.
type silentServer struct {
	addr     string
	accepted chan net.Conn
}

func startSilent(t *testing.T) *silentServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentServer{addr: l.Addr().String(), accepted: make(chan net.Conn, 16)}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			s.accepted <- c
		}
	}()
	return s
}

// url is the silent server as a remote of the given scheme.
func (s *silentServer) url(scheme string) string {
	return scheme + "://" + s.addr + "/r.git"
}

// closed waits, up to within, for the client to close c: every process
// that held the connection is gone.
func closed(c net.Conn, within time.Duration) error {
	c.SetReadDeadline(time.Now().Add(within))
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("still open after %s", within)
			}
			return nil
		}
	}
}

// silentHost is a host whose clone's origin is the silent server, with
// one transaction open that changes a file.
func silentHost(t *testing.T, url string) (*remoteHost, string) {
	t.Helper()
	x := newH(t)
	clone := filepath.Join(x.base, "clone")
	testbin.WriteFiles(t, clone, map[string]string{"a.txt": "a\n"})
	gitIn(t, clone, "init", "-q", "-b", "main")
	gitIn(t, clone, "add", "-A")
	gitIn(t, clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "seed")
	gitIn(t, clone, "remote", "add", "origin", url)
	hst := &remoteHost{h: x, clone: clone}
	return hst, hst.open(map[string]string{"a.txt": "b\n"})
}

// TestE2ERemoteTimeouts: land, log --remote and receipt verify --remote
// against a server that accepts the connection and never answers end
// within the bound that applies to the transport — the deadline for
// git://, http's low-speed limit, ssh's connect timeout (each with the
// deadline far off, so that it is that bound which ends them) — saying
// the remote timed out; land refuses RemoteTimeout (exit 75) and keeps
// the transaction, which lands later.
func TestE2ERemoteTimeouts(t *testing.T) {
	testbin.Require(t, "git", "the timeout scenarios fetch with git")
	for _, tt := range []struct {
		scheme string
		env    []string
		args   []string
		said   string        // what says which bound ended it
		bound  time.Duration // the bound that applies
	}{
		{"git", nil, []string{"--remote-timeout", "3s"}, "no answer within 3s", 3 * time.Second},
		{"http", []string{"AIRLOCK_REMOTE_LOW_SPEED_TIME=2s"}, []string{"--remote-timeout", "5m"}, "Operation too slow", 2 * time.Second},
		{"ssh", []string{"AIRLOCK_REMOTE_CONNECT_TIMEOUT=2s", "AIRLOCK_REMOTE_TIMEOUT=5m"}, nil, "timed out", 2 * time.Second},
	} {
		t.Run(tt.scheme, func(t *testing.T) {
			t.Parallel()
			if tt.scheme == "ssh" {
				testbin.Require(t, "ssh", "the ssh timeout scenario runs git over ssh")
			}
			srv := startSilent(t)
			hst, id := silentHost(t, srv.url(tt.scheme))
			// Far past the bound, far short of the default deadline
			// (10m): a landing that ran to the default failed.
			limit := tt.bound + 30*time.Second
			for _, c := range []struct {
				name string
				args []string
				want int
			}{
				{"land", []string{"land", "-q", "--remote", "origin", "--branch", "main", id}, 75},
				{"log", []string{"log", "--remote", "origin", "--branch", "main"}, 75},
				{"verify", []string{"receipt", "verify", "--remote", "origin", "--branch", "main"}, 75},
			} {
				start := time.Now()
				r := hst.run(tt.env, append(c.args, tt.args...)...)
				took := time.Since(start)
				out := r.Stdout + r.Stderr
				if r.Code != c.want || !strings.Contains(out, "timed out") || !strings.Contains(out, tt.said) {
					t.Errorf("%s against a silent %s server: want exit %d saying it timed out (%s)\n%s", c.name, tt.scheme, c.want, tt.said, r)
				}
				if took < tt.bound || took > limit {
					t.Errorf("%s against a silent %s server took %s: want the bound %s, not more than %s", c.name, tt.scheme, took, tt.bound, limit)
				}
				if c.name == "land" && (!strings.Contains(r.Stdout, "refused (RemoteTimeout)") || !strings.Contains(r.Stdout, "transaction is kept")) {
					t.Errorf("land: want a RemoteTimeout refusal that says the transaction is kept\n%s", r)
				}
			}
			show := hst.run(nil, "show", id, "--json")
			var info struct{ Status string }
			if err := json.Unmarshal([]byte(show.Stdout), &info); err != nil || info.Status != "refused" {
				t.Errorf("after the timeout %s is %q (%v), want refused and kept", id, info.Status, err)
			}
		})
	}
	// The kept transaction lands once the remote answers.
	srv := startDaemon(t)
	srv.seed(t, "k.git", map[string]string{"a.txt": "a\n"})
	silent := startSilent(t)
	hst := newRemoteHost(t, srv.url("k.git"))
	gitIn(t, hst.clone, "remote", "add", "silent", silent.url("git"))
	id := hst.open(map[string]string{"a.txt": "b\n"})
	if r := hst.run(nil, "land", "-q", "--remote", "silent", "--branch", "main", "--remote-timeout", "2s", id); r.Code != 75 {
		t.Fatalf("land against the silent remote: want exit 75\n%s", r)
	}
	if r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id); r.Code != 0 || !strings.Contains(r.Stdout, "landed   "+id) {
		t.Fatalf("the kept transaction, landed once the remote answers:\n%s", r)
	}
}

// TestE2ERemoteTimeoutFlagsChecked: a bound that is not a positive
// duration is an error naming the flag or the variable, before anything
// is fetched.
func TestE2ERemoteTimeoutFlagsChecked(t *testing.T) {
	hst, id := silentHost(t, "git://127.0.0.1:9/r.git")
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"land", "--remote", "origin", "--branch", "main", "--remote-timeout", "0s", id}, "--remote-timeout"},
		{nil, []string{"land", "--remote-timeout", "1m", id}, "--remote-timeout belongs to --remote"},
		{[]string{"AIRLOCK_REMOTE_TIMEOUT=soon"}, []string{"log", "--remote", "origin", "--branch", "main"}, "AIRLOCK_REMOTE_TIMEOUT"},
		{[]string{"AIRLOCK_REMOTE_LOW_SPEED_LIMIT=-1"}, []string{"receipt", "verify", "--remote", "origin", "--branch", "main"}, "AIRLOCK_REMOTE_LOW_SPEED_LIMIT"},
	} {
		r := hst.run(c.env, c.args...)
		if r.Code != 125 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%v %v: want exit 125 naming %s\n%s", c.env, c.args, c.want, r)
		}
	}
}

// marked lists the processes whose environment holds mark: what an
// airlock started with it in its environment left running (git, and
// git's remote helper or ssh).
func marked(t *testing.T, mark string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("\x00"+mark+"\x00")) && !bytes.HasPrefix(env, []byte(mark+"\x00")) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, e.Name()+" "+strings.ReplaceAll(string(bytes.TrimRight(cmd, "\x00")), "\x00", " "))
	}
	return out
}

// TestE2ERemoteKilledLeavesNoGit: a supervisor kills airlock (SIGKILL,
// which runs no handler, and SIGTERM) while its fetch hangs on a silent
// remote: no process it started survives — not git, and not what git
// started (git-remote-http, ssh), which holds the connection: the server
// sees it closed.
func TestE2ERemoteKilledLeavesNoGit(t *testing.T) {
	testbin.Require(t, "git", "the scenario fetches with git")
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc to find the processes by")
	}
	for _, scheme := range []string{"git", "http", "ssh"} {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
			t.Run(scheme+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				if scheme == "ssh" {
					testbin.Require(t, "ssh", "the ssh scenario runs git over ssh")
				}
				srv := startSilent(t)
				hst, id := silentHost(t, srv.url(scheme))
				var nonce [8]byte
				rand.Read(nonce[:])
				mark := "AIRLOCK_TEST_MARK=" + hex.EncodeToString(nonce[:])
				// The transports' own bounds far off: only the tether may
				// end what airlock started.
				env := hst.environ(mark, "AIRLOCK_REMOTE_CONNECT_TIMEOUT=10m", "AIRLOCK_REMOTE_LOW_SPEED_TIME=10m")
				p := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Args: []string{"land", "-q", "--remote", "origin", "--branch", "main", id},
					Dir: hst.clone, Env: env, Timeout: 2 * time.Minute})
				var c net.Conn
				select {
				case c = <-srv.accepted:
				case <-p.Done():
					t.Fatalf("land ended before it connected:\n%s", p.Wait())
				}
				// The handshake: the transport is connected and waiting.
				// What holds the connection is airlock's.
				if len(marked(t, mark)) < 2 {
					t.Fatalf("while the fetch hangs, want git and airlock among the marked processes, got %q", marked(t, mark))
				}
				if err := p.Signal(sig); err != nil {
					t.Fatal(err)
				}
				r := p.Wait()
				if r.Signal != sig {
					t.Fatalf("want airlock ended by %v\n%s", sig, r)
				}
				if err := closed(c, 30*time.Second); err != nil {
					t.Errorf("the connection airlock's git made: %v, after airlock was killed: %q", err, marked(t, mark))
				}
				// The connection's last holder is gone; the processes
				// may still be being reaped by the kernel: wait for that.
				deadline := time.Now().Add(30 * time.Second)
				for left := marked(t, mark); len(left) > 0; left = marked(t, mark) {
					if time.Now().After(deadline) {
						t.Fatalf("after airlock was killed by %v, its processes survive: %q", sig, left)
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		}
	}
}
