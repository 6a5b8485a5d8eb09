package main_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// cutMode is where a pushProxy cuts a push's client off.
type cutMode int

const (
	// cutAfterAccepted forwards the push whole and cuts the client at
	// the server's first byte after it: its report, which receive-pack
	// sends once the refs have moved. The push landed; the client
	// never hears so.
	cutAfterAccepted cutMode = iota
	// cutBeforeCommands cuts the client as it sends its commands,
	// forwarding none: the push reached nothing.
	cutBeforeCommands
	// holdCommands takes the client's commands and pack and forwards
	// none, holding the connection open: the server never answers.
	holdCommands
)

// pushProxy forwards TCP to a git daemon, both ways, and cuts the first
// push (a git-receive-pack connection) that passes it, as mode says.
// Fetches and ls-remote pass untouched; with down, after the cut it
// accepts no connection at all (the remote unreachable).
type pushProxy struct {
	addr string
	cut  chan struct{} // closed at the cut
}

func startPushProxy(t *testing.T, target string, mode cutMode, down bool) *pushProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pushProxy{addr: l.Addr().String(), cut: make(chan struct{})}
	var once sync.Once
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.serve(c, target, mode, func() {
					once.Do(func() {
						close(p.cut)
						if down {
							l.Close()
						}
					})
				})
			}()
		}
	}()
	return p
}

// serve forwards one connection. The client's first pkt-line names the
// service; in a push the server speaks first (its refs), then the client
// (commands and pack), then the server (its report).
func (p *pushProxy) serve(c net.Conn, target string, mode cutMode, cutNow func()) {
	defer c.Close()
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer s.Close()
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return
	}
	n, err := strconv.ParseUint(string(hdr), 16, 16)
	if err != nil || n < 4 {
		return
	}
	req := make([]byte, n-4)
	if _, err := io.ReadFull(c, req); err != nil {
		return
	}
	if _, err := s.Write(append(hdr, req...)); err != nil {
		return
	}
	select {
	case <-p.cut:
		// One push is cut; the rest pass.
		req = nil
	default:
	}
	push := bytes.HasPrefix(req, []byte("git-receive-pack "))
	var serverSpoke, clientSent atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 {
				if push && clientSent.Load() && mode == cutAfterAccepted {
					cutNow()
					c.Close()
					return
				}
				serverSpoke.Store(true)
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				c.Close()
				return
			}
		}
	}()
	// The client's side: what it sends once the server has spoken is
	// its commands and pack.
	buf := make([]byte, 32<<10)
	forward := true
	for {
		n, err := c.Read(buf)
		if n > 0 && push && serverSpoke.Load() && !clientSent.Load() {
			clientSent.Store(true)
			if mode != cutAfterAccepted {
				cutNow()
				forward = false
				if mode == cutBeforeCommands {
					break
				}
			}
		}
		if n > 0 && forward {
			if _, err := s.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if mode != cutAfterAccepted && push {
		s.Close()
	}
	<-done
}

// TestE2ERemotePushConnectionDropped: the connection drops during the
// push. Before saying anything, airlock asks the remote: both refs at the
// values pushed is a landing (reported and recorded as one, receipt and
// all); both as fetched is a failure that says nothing landed and gives
// no permission advice; a remote that cannot be asked is "unknown", the
// transaction kept, with what to run to find out — and landing it again
// finds it there.
func TestE2ERemotePushConnectionDropped(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mode   cutMode
		down   bool
		landed bool // the push reached the server's refs
	}{
		{"report lost", cutAfterAccepted, false, true},
		{"nothing reached", cutBeforeCommands, false, false},
		{"unknown", cutAfterAccepted, true, true},
		{"push timed out", holdCommands, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := startDaemon(t)
			srv.seed(t, "p.git", map[string]string{"a.txt": "a\n"})
			bare := filepath.Join(srv.root, "p.git")
			// No keepalive while the server works on the pack: its first
			// byte after the pack is its report.
			gitIn(t, bare, "config", "receive.keepAlive", "0")
			before := gitIn(t, bare, "rev-parse", "main")
			daemon := strings.TrimPrefix(strings.TrimSuffix(srv.url("p.git"), "/p.git"), "git://")
			proxy := startPushProxy(t, daemon, tt.mode, tt.down)
			hst := newRemoteHost(t, srv.url("p.git"))
			gitIn(t, hst.clone, "remote", "add", "cut", "git://"+proxy.addr+"/p.git")
			id := hst.open(map[string]string{"a.txt": "b\n"})
			r := hst.run(nil, "land", "-q", "--remote", "cut", "--branch", "main", "--remote-timeout", "5s", id)
			t.Logf("the land whose push was cut: %s", r)
			select {
			case <-proxy.cut:
			default:
				t.Fatalf("the proxy never cut the push: the scenario did not happen\n%s", r)
			}
			head := gitIn(t, bare, "rev-parse", "main")
			if got := len(landed(t, bare, "main")[id]); tt.landed != (got == 1) || got > 1 {
				t.Fatalf("%s on the server %d times, want landed=%v\n%s", id, got, tt.landed, r)
			}
			var info struct{ Status string }
			show := func() string {
				s := hst.run(nil, "show", id, "--json")
				info.Status = ""
				json.Unmarshal([]byte(s.Stdout), &info)
				return info.Status
			}
			switch tt.name {
			case "report lost":
				if r.Code != 0 || !strings.Contains(r.Stdout, "landed   "+id+"  "+head) || !strings.Contains(r.Stderr, "did not hear") {
					t.Fatalf("a push whose report was lost: want landed %s with a warning that says so\n%s", head, r)
				}
				if st := show(); st != "committed" {
					t.Errorf("%s is %q, want committed", id, st)
				}
				if v := hst.run(nil, "receipt", "verify", id); v.Code != 0 {
					t.Errorf("the local receipt does not verify:\n%s", v)
				}
				if v := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main"); v.Code != 0 || !strings.Contains(v.Stdout, "receipts=1") {
					t.Errorf("the receipt on the branch does not verify:\n%s", v)
				}
				return
			case "nothing reached":
				if head != before {
					t.Fatalf("main moved to %s", head)
				}
				if r.Code != 125 || !strings.Contains(r.Stdout, "failed   "+id) || !strings.Contains(r.Stdout, "nothing landed") || !strings.Contains(r.Stdout, "is kept") {
					t.Fatalf("a push that reached nothing: want failed, saying nothing landed and the transaction is kept\n%s", r)
				}
				if strings.Contains(r.Stdout+r.Stderr, "allowed here") || strings.Contains(r.Stdout+r.Stderr, "credentials") {
					t.Errorf("a dropped connection is no matter of permission, but the message advises on it\n%s", r)
				}
				if st := show(); st != "open" {
					t.Errorf("%s is %q, want open (kept)", id, st)
				}
				if r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id); r.Code != 0 || !strings.Contains(r.Stdout, "landed   "+id) {
					t.Errorf("the kept transaction, landed again:\n%s", r)
				}
			case "push timed out":
				if head != before {
					t.Fatalf("main moved to %s", head)
				}
				if r.Code != 75 || !strings.Contains(r.Stdout, "refused (RemoteTimeout)") || !strings.Contains(r.Stdout, "timed out") || !strings.Contains(r.Stdout, "nothing landed") || !strings.Contains(r.Stdout, "is kept") {
					t.Fatalf("a push the server never answered, the remote unchanged after: want RemoteTimeout, nothing landed, the transaction kept\n%s", r)
				}
				if st := show(); st != "refused" {
					t.Errorf("%s is %q, want refused (kept)", id, st)
				}
			case "unknown":
				if r.Code != 125 || !strings.Contains(r.Stdout, "failed   "+id) || !strings.Contains(r.Stdout, "unknown") ||
					!strings.Contains(r.Stdout, "is kept") || !strings.Contains(r.Stdout, "`airlock log --remote cut --branch main`") {
					t.Fatalf("a push whose outcome cannot be learnt: want it called unknown, the transaction kept, and how to find out\n%s", r)
				}
				if strings.Contains(r.Stdout+r.Stderr, "allowed here") {
					t.Errorf("a dropped connection is no matter of permission, but the message advises on it\n%s", r)
				}
				if st := show(); st != "open" {
					t.Errorf("%s is %q, want open (kept)", id, st)
				}
				if r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id); r.Code != 0 || !strings.Contains(r.Stdout, "already  "+id+"  "+head) {
					t.Errorf("landed again where it had landed: want already %s\n%s", head, r)
				}
				if st := show(); st != "committed" {
					t.Errorf("%s is %q after landing again, want committed", id, st)
				}
			}
		})
	}
}

// TestE2ERemoteSSHOptionsLeaveTheUsersCommand: git's ssh gets airlock's
// bounds (ConnectTimeout, ServerAliveInterval, ServerAliveCountMax, from
// the variables) unless the user chose the ssh command
// (GIT_SSH_COMMAND, core.sshCommand in the configuration git reads):
// that one runs as the user wrote it. An ssh that records its arguments
// and fails stands in for ssh.
func TestE2ERemoteSSHOptionsLeaveTheUsersCommand(t *testing.T) {
	testbin.Require(t, "git", "the scenario fetches with git")
	bin := t.TempDir()
	rec := filepath.Join(t.TempDir(), "argv")
	fake := "#!/bin/sh\necho \"$0 $*\" >> " + rec + "\nexit 255\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "user-ssh"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	hst, _ := silentHost(t, "ssh://127.0.0.1:9/r.git")
	path := "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, c := range []struct {
		name   string
		env    []string
		config string // core.sshCommand in the user's git config, if any
		want   string // how the recorded line starts
		bounds bool
	}{
		{"airlock's", []string{path, "AIRLOCK_REMOTE_CONNECT_TIMEOUT=7s", "AIRLOCK_REMOTE_LOW_SPEED_TIME=90s"}, "", filepath.Join(bin, "ssh"), true},
		{"GIT_SSH_COMMAND", []string{path, "GIT_SSH_COMMAND=user-ssh -o User=me"}, "", filepath.Join(bin, "user-ssh") + " -o User=me", false},
		{"core.sshCommand", []string{path}, "user-ssh -o User=cfg", filepath.Join(bin, "user-ssh") + " -o User=cfg", false},
	} {
		os.Remove(rec)
		env := c.env
		if c.config != "" {
			global := filepath.Join(t.TempDir(), "gitconfig")
			testbin.WriteFiles(t, filepath.Dir(global), map[string]string{"gitconfig": "[core]\n\tsshCommand = " + c.config + "\n"})
			env = append(env, "GIT_CONFIG_GLOBAL="+global)
		}
		r := hst.run(env, "log", "--remote", "origin", "--branch", "main")
		if r.Code != 125 {
			t.Errorf("%s: an ssh that fails: want exit 125\n%s", c.name, r)
		}
		got := strings.TrimSpace(testbin.ReadFile(t, rec))
		bounds := strings.Contains(got, "ConnectTimeout=7") && strings.Contains(got, "ServerAliveInterval=30") && strings.Contains(got, "ServerAliveCountMax=3")
		if !strings.HasPrefix(got, c.want) || bounds != c.bounds || (!c.bounds && strings.Contains(got, "ConnectTimeout")) {
			t.Errorf("%s: ssh ran as %q; want it to start %q, with airlock's bounds %v", c.name, got, c.want, c.bounds)
		}
	}
}

// TestE2ERemotePushRefusedByServerAdvises: where the server itself
// refused the push (a pre-receive hook), the remote still holds what was
// fetched: the failure says nothing landed, quotes the server's refusal,
// and advises on what may push there — the one case where that advice
// fits.
func TestE2ERemotePushRefusedByServerAdvises(t *testing.T) {
	srv := startDaemon(t)
	srv.seed(t, "h.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "h.git")
	testbin.WriteFiles(t, filepath.Join(bare, "hooks"), map[string]string{"pre-receive": "#!/bin/sh\necho 'no landings today' >&2\nexit 1\n"})
	if err := os.Chmod(filepath.Join(bare, "hooks", "pre-receive"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := gitIn(t, bare, "rev-parse", "main")
	hst := newRemoteHost(t, srv.url("h.git"))
	id := hst.open(map[string]string{"a.txt": "b\n"})
	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 125 || !strings.Contains(r.Stdout, "pre-receive hook declined") || !strings.Contains(r.Stdout, "nothing landed") || !strings.Contains(r.Stdout, "allowed here") {
		t.Errorf("a push the server's hook refused: want exit 125 quoting the refusal, saying nothing landed, with the advice\n%s", r)
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != before {
		t.Errorf("main moved to %s", h)
	}
}
