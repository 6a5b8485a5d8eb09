package main_test

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// attack13: where batches (remote_batch.go) meet the bounded push
// (remotenet), the clone's authentication (remoteauth) and signed
// receipts (signing). Each scenario lands a batch of several
// transactions with one `land --remote`.

// cutBatchHost is a served repository behind a pushProxy cutting the
// first push as mode says, a host whose clone names the proxy "cut",
// and two transactions of that clone.
func cutBatchHost(t *testing.T, mode cutMode) (bare, before string, hst *remoteHost, proxy *pushProxy, ids []string) {
	t.Helper()
	srv := startDaemon(t)
	srv.seed(t, "p.git", map[string]string{"a.txt": "a\n"})
	bare = filepath.Join(srv.root, "p.git")
	gitIn(t, bare, "config", "receive.keepAlive", "0")
	before = gitIn(t, bare, "rev-parse", "main")
	daemon := strings.TrimPrefix(strings.TrimSuffix(srv.url("p.git"), "/p.git"), "git://")
	proxy = startPushProxy(t, daemon, mode, false)
	hst = newRemoteHost(t, srv.url("p.git"))
	gitIn(t, hst.clone, "remote", "add", "cut", "git://"+proxy.addr+"/p.git")
	ids = []string{hst.open(map[string]string{"x.txt": "x\n"}), hst.open(map[string]string{"y.txt": "y\n"})}
	return
}

// A batch whose push reached the server but whose report was lost: every
// member is landed and recorded committed, and landing them again says
// `already` for each, moving nothing.
func TestE2EAttack13BatchReportLostLandsEveryMember(t *testing.T) {
	bare, _, hst, proxy, ids := cutBatchHost(t, cutAfterAccepted)
	r := hst.run(nil, append([]string{"land", "-q", "--remote", "cut", "--branch", "main", "--remote-timeout", "5s"}, ids...)...)
	select {
	case <-proxy.cut:
	default:
		t.Fatalf("the proxy never cut the push\n%s", r)
	}
	on := landed(t, bare, "main")
	head := gitIn(t, bare, "rev-parse", "main")
	if r.Code != 0 {
		t.Errorf("a batch whose push report was lost: want exit 0\n%s", r)
	}
	for _, id := range ids {
		if len(on[id]) != 1 {
			t.Errorf("%s is on main %d times, want once\n%s", id, len(on[id]), r)
		}
		if s := statusOf(t, hst, id); s != "committed" {
			t.Errorf("%s is %s, want committed: it landed\n%s", id, s, r)
		}
	}
	again := hst.run(nil, append([]string{"land", "-q", "--remote", "origin", "--branch", "main"}, ids...)...)
	for _, id := range ids {
		if !strings.Contains(again.Stdout, "already  "+id) {
			t.Errorf("landed again after the lost report: want already %s\n%s", id, again)
		}
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != head {
		t.Errorf("landing again moved main %s → %s", head, h)
	}
	if v := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main"); v.Code != 0 || !strings.Contains(v.Stdout, "receipts=2") {
		t.Errorf("receipts of the batch whose report was lost:\n%s", v)
	}
}

// Two clones of one URL, one with credentials (http.extraheader) and one
// without: their transactions must not share a push. Each authenticates
// as its own clone: the first lands, the second is refused as `git fetch
// origin` in its clone is.
func TestE2EAttack13BatchClonesWithOtherCredentialsLandApart(t *testing.T) {
	srv := startAuthHTTP(t, "u", "pw", "tok")
	srv.seed(t, "h.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "h.git")
	url := srv.url("h.git")
	hst := newAuthHost(t, srv, "h.git", url)
	gitIn(t, hst.clone, "config", "http.extraheader", "Authorization: Bearer tok")
	second := filepath.Join(hst.base, "second")
	gitIn(t, hst.base, "clone", "-q", filepath.Join(srv.root, "h.git"), second)
	gitIn(t, second, "remote", "set-url", "origin", url)
	if out, err := (&remoteHost{h: hst.h, clone: second}).gitAs(nil, "fetch", "origin"); err == nil {
		t.Fatalf("git fetch origin in the clone without credentials worked: the scenario does not hold\n%s", out)
	}
	one := hst.open(map[string]string{"one.txt": "one\n"})
	res := hst.run(nil, "open", "--workdir", second)
	if res.Code != 0 {
		t.Fatalf("open in the second clone: %s", res)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	two := lines[0]
	testbin.WriteFiles(t, lines[1], map[string]string{"two.txt": "two\n"})
	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", one, two)
	on := landed(t, bare, "main")
	if len(on[one]) != 1 {
		t.Errorf("the transaction of the clone with credentials did not land\n%s", r)
	}
	if len(on[two]) != 0 {
		t.Errorf("the transaction of the clone without credentials landed: it pushed with the other clone's\n%s", r)
	}
	if s := statusOf(t, hst, two); s == "committed" {
		t.Errorf("%s is committed, want kept", two)
	}
}

// A batch of two clones' transactions where the second clone's signing
// key cannot sign: nothing of the batch lands unsigned. The second is
// not on main; the first, if it landed, carries a receipt signed with
// its own clone's key, and each member's status agrees with the server.
func TestE2EAttack13BatchUnsignableMemberLandsNothingUnsigned(t *testing.T) {
	alice := newSSHKey(t, "alice@example.com")
	signers := allowedSigners(t, alice)
	srv := startDaemon(t)
	srv.seed(t, "g.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "g.git")
	hst := newRemoteHost(t, srv.url("g.git"))
	signWith(t, hst.clone, alice.private)
	second := filepath.Join(hst.base, "second")
	gitIn(t, hst.base, "clone", "-q", srv.url("g.git"), second)
	missing := filepath.Join(testbin.RealDir(t), "no_such_key")
	signWith(t, second, missing)
	one := hst.open(map[string]string{"one.txt": "one\n"})
	res := hst.run(nil, "open", "--workdir", second)
	if res.Code != 0 {
		t.Fatalf("open in the second clone: %s", res)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	two := lines[0]
	testbin.WriteFiles(t, lines[1], map[string]string{"two.txt": "two\n"})
	r := hst.run([]string{"SSH_AUTH_SOCK="}, "land", "-q", "--remote", "origin", "--branch", "main", one, two)
	on := landed(t, bare, "main")
	if len(on[two]) != 0 {
		t.Errorf("the transaction whose key cannot sign landed\n%s", r)
	}
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, missing) {
		t.Errorf("want a failure naming the key that cannot sign\n%s", r)
	}
	if s := statusOf(t, hst, two); s == "committed" {
		t.Errorf("%s is committed though it is not on main", two)
	}
	if c := on[one]; len(c) == 1 {
		if err := sshVerifies(t, noteBytesOf(t, bare, c[0]), signers, "alice@example.com"); err != nil {
			t.Errorf("%s landed with a receipt its clone's key did not sign: %v\n%s", one, err, r)
		}
		if s := statusOf(t, hst, one); s != "committed" {
			t.Errorf("%s is on main but %s", one, s)
		}
	} else if s := statusOf(t, hst, one); s == "committed" {
		t.Errorf("%s is committed though it is not on main", one)
	}
	t.Logf("the batch with one unsignable member:\n%s", r)
}

// A supervisor kills airlock (SIGKILL) while a batch's fetch hangs on a
// silent remote: no git it started survives, and the server sees the
// connection closed.
func TestE2EAttack13BatchKilledLeavesNoGit(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc to find the processes by")
	}
	srv := startSilent(t)
	hst, one := silentHost(t, srv.url("git"))
	two := hst.open(map[string]string{"b.txt": "b\n"})
	var nonce [8]byte
	rand.Read(nonce[:])
	mark := "AIRLOCK_TEST_MARK=" + hex.EncodeToString(nonce[:])
	p := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Args: []string{"land", "-q", "--remote", "origin", "--branch", "main", one, two},
		Dir: hst.clone, Env: hst.environ(mark), Timeout: 2 * time.Minute})
	var c net.Conn
	select {
	case c = <-srv.accepted:
	case <-p.Done():
		t.Fatalf("land ended before it connected:\n%s", p.Wait())
	}
	if len(marked(t, mark)) < 2 {
		t.Fatalf("while the batch's fetch hangs, want git and airlock among the marked processes, got %q", marked(t, mark))
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if err := closed(c, 30*time.Second); err != nil {
		t.Errorf("the connection the batch's git made: %v, after airlock was killed: %q", err, marked(t, mark))
	}
	deadline := time.Now().Add(30 * time.Second)
	for left := marked(t, mark); len(left) > 0; left = marked(t, mark) {
		if time.Now().After(deadline) {
			t.Fatalf("after airlock was killed mid-batch, its processes survive: %q", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
