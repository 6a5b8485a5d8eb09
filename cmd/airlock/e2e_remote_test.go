package main_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// These scenarios land transactions into a real git server the test runs
// on 127.0.0.1 — git daemon over the git protocol, and git http-backend
// over smart HTTP — from hosts that share nothing but that server: each
// its own clone, state root, home and airlock processes.

// gitServer serves the bare repositories under root.
type gitServer struct {
	root string
	url  func(name string) string
}

// gitEnv is the environment of the git the tests run as oracles and
// servers: no user or system config.
func gitEnv(extra ...string) []string {
	return testbin.Environ(os.TempDir(), os.TempDir(), extra...)
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// startDaemon runs `git daemon --enable=receive-pack` on a free port.
func startDaemon(t *testing.T) *gitServer {
	t.Helper()
	testbin.Require(t, "git", "the remote landing tests serve repositories with git daemon")
	root := testbin.RealDir(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command("git", "daemon", "--enable=receive-pack", "--export-all", "--reuseaddr", "--informative-errors",
		"--base-path="+root, "--listen=127.0.0.1", "--port="+port, root)
	cmd.Env = gitEnv()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start git daemon: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// A readiness poll, bounded far past any load: nothing races it.
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("git daemon did not listen on 127.0.0.1:%s: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &gitServer{root: root, url: func(name string) string { return "git://127.0.0.1:" + port + "/" + name }}
}

// startHTTP serves smart HTTP through git http-backend as CGI; with
// password set, every request needs basic auth as user "u".
func startHTTP(t *testing.T, password string) *gitServer {
	t.Helper()
	testbin.Require(t, "git", "the remote landing tests serve repositories with git http-backend")
	root := testbin.RealDir(t)
	cmd := exec.Command("git", "--exec-path")
	cmd.Env = gitEnv()
	execPath, err := cmd.Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	var h http.Handler = &cgi.Handler{Path: backend, Env: append(gitEnv(), "GIT_PROJECT_ROOT="+root, "GIT_HTTP_EXPORT_ALL=1")}
	if password != "" {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &gitServer{root: root, url: func(name string) string { return srv.URL + "/" + name }}
}

// shared is the file every landing edits one line of: lines far enough
// apart that edits to different ones merge cleanly.
func sharedFile(n int) string {
	var b strings.Builder
	for i := 0; i < 2*n+1; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// seed makes the bare repository name on the server with one commit on
// main: shared.txt, conflict.txt, and a project config.
func (s *gitServer) seed(t *testing.T, name string, files map[string]string) {
	t.Helper()
	bare := filepath.Join(s.root, name)
	gitIn(t, s.root, "init", "-q", "--bare", "-b", "main", bare)
	gitIn(t, bare, "config", "http.receivepack", "true")
	work := testbin.RealDir(t)
	testbin.WriteFiles(t, work, files)
	gitIn(t, work, "init", "-q", "-b", "main")
	gitIn(t, work, "add", "-A")
	gitIn(t, work, "commit", "-q", "-m", "seed")
	gitIn(t, work, "push", "-q", bare, "main")
}

// remoteHost is one machine: its own clone, state root and home.
type remoteHost struct {
	*h
	clone string
}

func newRemoteHost(t *testing.T, url string) *remoteHost {
	t.Helper()
	x := newH(t)
	clone := filepath.Join(x.base, "clone")
	gitIn(t, x.base, "clone", "-q", url, clone)
	return &remoteHost{h: x, clone: clone}
}

// run runs airlock on this host, from its clone.
func (r *remoteHost) run(env []string, args ...string) testbin.Result {
	r.t.Helper()
	return testbin.Run(r.t, testbin.Cmd{Bin: airlockBin, Args: args, Dir: r.clone, Env: r.environ(env...), Timeout: 2 * time.Minute})
}

// open opens a transaction over the clone and writes files into it.
func (r *remoteHost) open(files map[string]string) string {
	r.t.Helper()
	res := r.run(nil, "open", "--workdir", r.clone)
	if res.Code != 0 {
		r.t.Fatalf("open: %s", res)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	testbin.WriteFiles(r.t, lines[1], files)
	return lines[0]
}

// edit returns content with line n replaced.
func editLine(content string, n int, to string) string {
	lines := strings.Split(content, "\n")
	lines[n] = to
	return strings.Join(lines, "\n")
}

// landed maps each Airlock-Tx trailer on the branch's first-parent
// history to the commits carrying it.
func landed(t *testing.T, bare, branch string) map[string][]string {
	t.Helper()
	out := gitIn(t, bare, "log", "--first-parent", "--format=%H %(trailers:key=Airlock-Tx,valueonly,separator=%x2C)", branch)
	m := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			m[f[1]] = append(m[f[1]], f[0])
		}
	}
	return m
}

// treeRecorder is a --validate command that appends the tree id of the
// candidate it sees (hashed by git itself, in a repository it makes in
// the candidate) to dir/<tx>.
func treeRecorder(dir string) string {
	return fmt.Sprintf(`git init -q . && git add -A . && git write-tree >> %s/"$AIRLOCK_TX"`, dir)
}

func lastLine(t *testing.T, path string) (string, int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(testbin.ReadFile(t, path)), "\n")
	return lines[len(lines)-1], len(lines)
}

// Hosts × transactions racing to one branch over the git protocol: every
// non-conflicting change lands exactly once (three-way merged with what
// landed meanwhile), every conflict is refused with nothing pushed, every
// landed commit's tree is the tree its validator saw, and the notes chain
// verifies from a host that took part in nothing.
func TestE2ERemoteRacingHosts(t *testing.T) {
	srv := startDaemon(t)
	const hosts, perHost = 3, 2
	shared := sharedFile(hosts * perHost)
	srv.seed(t, "proj.git", map[string]string{"shared.txt": shared, "conflict.txt": "one\ntwo\nthree\n"})
	url := srv.url("proj.git")
	seen := testbin.RealDir(t)

	type plan struct {
		host  *remoteHost
		ids   []string
		clash string // the transaction that edits conflict.txt
	}
	plans := make([]plan, hosts)
	for i := range plans {
		hst := newRemoteHost(t, url)
		p := plan{host: hst}
		for j := 0; j < perHost; j++ {
			k := i*perHost + j
			id := hst.open(map[string]string{
				fmt.Sprintf("h%d-%d.txt", i, j): fmt.Sprintf("host %d tx %d\n", i, j),
				"shared.txt":                    editLine(shared, 2*k+1, fmt.Sprintf("edited by host %d tx %d", i, j)),
			})
			p.ids = append(p.ids, id)
		}
		p.clash = hst.open(map[string]string{"conflict.txt": fmt.Sprintf("one\nhost %d\nthree\n", i)})
		p.ids = append(p.ids, p.clash)
		plans[i] = p
	}

	results := make([]testbin.Result, hosts)
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"land", "-q", "--remote", "origin", "--branch", "main", "--retries", "30", "--validate", treeRecorder(seen)}, p.ids...)
			results[i] = p.host.run(nil, args...)
		}()
	}
	wg.Wait()

	bare := filepath.Join(srv.root, "proj.git")
	on := landed(t, bare, "main")
	clashWinners := 0
	for i, p := range plans {
		r := results[i]
		for _, id := range p.ids[:perHost] {
			if len(on[id]) != 1 {
				t.Errorf("transaction %s is on main %d times, want once\n%s", id, len(on[id]), r)
			}
		}
		switch {
		case len(on[p.clash]) == 1:
			clashWinners++
			if r.Code != 0 {
				t.Errorf("host %d landed everything but exited %d\n%s", i, r.Code, r)
			}
		case len(on[p.clash]) == 0:
			if r.Code != 75 || !strings.Contains(r.Stdout, "refused  "+p.clash+"  refused (MergeConflict)") {
				t.Errorf("host %d: the conflicting transaction was not refused MergeConflict with exit 75\n%s", i, r)
			}
			show := p.host.run(nil, "show", p.clash, "--json")
			var info struct{ Status string }
			if err := json.Unmarshal([]byte(show.Stdout), &info); err != nil || info.Status != "refused" {
				t.Errorf("refused transaction %s is %q, want kept as refused (%v)\n%s", p.clash, info.Status, err, show)
			}
		default:
			t.Errorf("conflicting transaction %s is on main %d times", p.clash, len(on[p.clash]))
		}
	}
	if clashWinners != 1 {
		t.Errorf("%d of the conflicting transactions landed, want exactly 1", clashWinners)
	}
	if len(on) != hosts*perHost+1 {
		t.Errorf("main carries %d airlock transactions, want %d: %v", len(on), hosts*perHost+1, on)
	}
	// Every change is there, the shared file merged from all.
	got := gitIn(t, bare, "show", "main:shared.txt")
	for i := 0; i < hosts; i++ {
		for j := 0; j < perHost; j++ {
			if !strings.Contains(got, fmt.Sprintf("edited by host %d tx %d", i, j)) {
				t.Errorf("shared.txt on main lacks host %d tx %d's edit:\n%s", i, j, got)
			}
			if c := gitIn(t, bare, "show", fmt.Sprintf("main:h%d-%d.txt", i, j)); c != fmt.Sprintf("host %d tx %d", i, j) {
				t.Errorf("h%d-%d.txt on main = %q", i, j, c)
			}
		}
	}
	// Each landed commit's receipt names the tree its validators passed:
	// its own (validated alone), or its batch's tip (the tree of the
	// batch's last commit, on the branch at or after it); that tree is the
	// last candidate the validator saw when it ran for the transaction
	// landed with it.
	byTree := map[string]string{}
	for id, commits := range on {
		byTree[gitIn(t, bare, "rev-parse", commits[0]+"^{tree}")] = id
	}
	for id, commits := range on {
		var rc struct {
			Validated string `json:"validated"`
			BatchTree string `json:"batch_tree"`
		}
		if err := json.Unmarshal([]byte(gitIn(t, bare, "notes", "--ref=airlock", "show", commits[0])), &rc); err != nil {
			t.Fatalf("the note of %s: %v", commits[0], err)
		}
		tree := gitIn(t, bare, "rev-parse", commits[0]+"^{tree}")
		switch rc.Validated {
		case "alone":
		case "batch":
			tree = rc.BatchTree
		default:
			t.Errorf("the receipt of %s says it was validated %q", id, rc.Validated)
			continue
		}
		tip, ok := byTree[tree]
		if !ok {
			t.Errorf("transaction %s was validated on %s, the tree of no landed commit", id, tree)
			continue
		}
		if saw, _ := lastLine(t, filepath.Join(seen, tip)); saw != tree {
			t.Errorf("transaction %s landed validated on %s, but the validator last saw %s", id, tree, saw)
		}
	}
	// A host that took part in nothing verifies the chain from the remote.
	other := newRemoteHost(t, url)
	v := other.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
	if v.Code != 0 || !strings.Contains(v.Stdout, fmt.Sprintf("receipts=%d", hosts*perHost+1)) {
		t.Errorf("receipt verify --remote:\n%s", v)
	}
	lg := other.run(nil, "log", "--remote", url, "--branch", "main", "--json")
	var doc struct {
		Entries []struct {
			Commit  string
			Receipt struct {
				Tx           string `json:"tx"`
				LandedCommit string `json:"landed_commit"`
				Previous     string `json:"previous"`
				Digest       string `json:"digest"`
			}
		}
		Broken string
	}
	if err := json.Unmarshal([]byte(lg.Stdout), &doc); err != nil || lg.Code != 0 {
		t.Fatalf("log --remote --json: %v\n%s", err, lg)
	}
	if len(doc.Entries) != hosts*perHost+1 || doc.Broken != "" {
		t.Errorf("log --remote lists %d entries (broken %q), want %d", len(doc.Entries), doc.Broken, hosts*perHost+1)
	}
	for i, e := range doc.Entries {
		if e.Receipt.LandedCommit != e.Commit || !slices.Contains(on[e.Receipt.Tx], e.Commit) {
			t.Errorf("entry %d: receipt of %s says commit %s, listed as %s", i, e.Receipt.Tx, e.Receipt.LandedCommit, e.Commit)
		}
		if i+1 < len(doc.Entries) && e.Receipt.Previous != doc.Entries[i+1].Receipt.Digest {
			t.Errorf("entry %d's previous %s is not the next entry's digest %s", i, e.Receipt.Previous, doc.Entries[i+1].Receipt.Digest)
		}
	}

	// Tampering with one note breaks the chain there, and verify says so.
	victim := doc.Entries[len(doc.Entries)/2].Commit
	note := gitIn(t, bare, "notes", "--ref=airlock", "show", victim)
	tampered := strings.Replace(note, `"modified": 1`, `"modified": 2`, 1)
	if tampered == note {
		t.Fatalf("note of %s has no \"modified\": 1 to change:\n%s", victim, note)
	}
	work := testbin.RealDir(t)
	gitIn(t, work, "clone", "-q", "--bare", bare, "tamper.git")
	tdir := filepath.Join(work, "tamper.git")
	gitIn(t, tdir, "fetch", "-q", bare, "refs/notes/airlock:refs/notes/airlock")
	cmd := exec.Command("git", "notes", "--ref=airlock", "add", "-f", "-F", "-", victim)
	cmd.Dir, cmd.Env, cmd.Stdin = tdir, gitEnv(), strings.NewReader(tampered)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rewrite the note: %v\n%s", err, out)
	}
	gitIn(t, tdir, "push", "-q", "-f", bare, "refs/notes/airlock:refs/notes/airlock")
	v = other.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
	if v.Code != 1 || !strings.Contains(v.Stderr, victim) {
		t.Errorf("receipt verify --remote after a note was edited: want exit 1 naming %s\n%s", victim, v)
	}
}

// Over smart HTTP: a landing, then the same transaction again (reported,
// nothing pushed), a protected path refused with nothing pushed, and a
// server that wants credentials the host does not have.
func TestE2ERemoteHTTPIdempotentProtectedAuth(t *testing.T) {
	srv := startHTTP(t, "")
	srv.seed(t, "p.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "p.git")
	hst := newRemoteHost(t, srv.url("p.git"))

	id := hst.open(map[string]string{"a.txt": "a2\n", "b.txt": "b\n"})
	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 0 || !strings.Contains(r.Stdout, "landed   "+id) {
		t.Fatalf("land over HTTP:\n%s", r)
	}
	head := gitIn(t, bare, "rev-parse", "main")
	notes := gitIn(t, bare, "rev-parse", "refs/notes/airlock")
	if c := gitIn(t, bare, "show", "main:a.txt"); c != "a2" {
		t.Errorf("a.txt on main = %q", c)
	}
	if got := gitIn(t, hst.clone, "show", "HEAD:a.txt"); got != "a" || testbin.ReadFile(t, filepath.Join(hst.clone, "a.txt")) != "a\n" {
		t.Errorf("the landing touched the host's clone: HEAD:a.txt %q", got)
	}

	again := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if again.Code != 0 || !strings.Contains(again.Stdout, "already  "+id+"  "+head) {
		t.Errorf("landing %s again: want `already` with %s\n%s", id, head, again)
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != head {
		t.Errorf("landing again moved main from %s to %s", head, h)
	}

	prot := hst.open(map[string]string{".envrc": "export X=1\n"})
	r = hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", prot)
	if r.Code != 75 || !strings.Contains(r.Stdout, "ProtectedPathNotApproved") {
		t.Errorf("a protected path: want exit 75 ProtectedPathNotApproved\n%s", r)
	}
	if h, n := gitIn(t, bare, "rev-parse", "main"), gitIn(t, bare, "rev-parse", "refs/notes/airlock"); h != head || n != notes {
		t.Errorf("a refused landing pushed: main %s→%s, notes %s→%s", head, h, notes, n)
	}

	// A validator that fails on the candidate refuses, nothing pushed.
	bad := hst.open(map[string]string{"d.txt": "d\n"})
	r = hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", "--validate", "test ! -e d.txt", bad)
	if r.Code != 75 || !strings.Contains(r.Stdout, "ValidationFailed") {
		t.Errorf("a failing validator: want exit 75 ValidationFailed\n%s", r)
	}
	// The clone is still at the seed: an edit of a.txt overlaps the one
	// that landed (MergeConflict); once another host deleted a.txt, an
	// edit of it cannot be merged at all (BaseDrift). Nothing is pushed.
	clash := hst.open(map[string]string{"a.txt": "a3\n"})
	r = hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", clash)
	if r.Code != 75 || !strings.Contains(r.Stdout, "refused (MergeConflict)") {
		t.Errorf("an overlapping edit: want exit 75 MergeConflict\n%s", r)
	}
	other := newRemoteHost(t, srv.url("p.git"))
	gitIn(t, other.clone, "rm", "-q", "a.txt")
	gitIn(t, other.clone, "commit", "-q", "-m", "rm a")
	gitIn(t, other.clone, "push", "-q", "origin", "HEAD:main")
	head = gitIn(t, bare, "rev-parse", "main")
	r = hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", clash)
	if r.Code != 75 || !strings.Contains(r.Stdout, "refused (BaseDrift)") {
		t.Errorf("an edit of a file the branch deleted: want exit 75 BaseDrift\n%s", r)
	}
	if h, n := gitIn(t, bare, "rev-parse", "main"), gitIn(t, bare, "rev-parse", "refs/notes/airlock"); h != head || n != notes {
		t.Errorf("a refused landing pushed: main %s→%s, notes %s→%s", head, h, notes, n)
	}

	locked := startHTTP(t, "sekrit")
	locked.seed(t, "q.git", map[string]string{"a.txt": "a\n"})
	// The host's clone came from elsewhere: the remote is a URL here.
	nid := hst.open(map[string]string{"c.txt": "c\n"})
	r = hst.run(nil, "land", "-q", "--remote", locked.url("q.git"), "--branch", "main", nid)
	if r.Code != 125 || !strings.Contains(r.Stdout, "terminal prompts disabled") || !strings.Contains(r.Stdout, "authenticates as git does") {
		t.Errorf("a server that wants credentials: want exit 125 saying how airlock authenticates\n%s", r)
	}
	// A wrong password in the URL: refused, and never shown.
	wrong := strings.Replace(locked.url("q.git"), "http://", "http://u:wrongpass@", 1)
	r = hst.run(nil, "land", "-q", "--remote", wrong, "--branch", "main", nid)
	if r.Code != 125 || !strings.Contains(r.Stdout, "Authentication failed") {
		t.Errorf("a wrong password: want exit 125, authentication failed\n%s", r)
	}
	if strings.Contains(r.Stdout+r.Stderr, "wrongpass") {
		t.Errorf("the error shows the password:\n%s", r)
	}
	if testbin.Exists(filepath.Join(locked.root, "q.git", "refs", "notes")) && gitIn(t, filepath.Join(locked.root, "q.git"), "for-each-ref", "refs/notes") != "" {
		t.Errorf("a landing without credentials pushed notes")
	}
}

// The remote moves between the candidate's validation and the push: the
// landing fetches, merges and validates again and lands on top. With no
// retries left it refuses RemoteMoved and pushes nothing.
func TestE2ERemoteMovedMidLand(t *testing.T) {
	srv := startDaemon(t)
	srv.seed(t, "m.git", map[string]string{"a.txt": "1\n2\n3\n4\n5\n"})
	bare := filepath.Join(srv.root, "m.git")
	url := srv.url("m.git")
	hst := newRemoteHost(t, url)
	pusher := newRemoteHost(t, url)
	seen := testbin.RealDir(t)

	// Another host's plain git push, made while the landing is paused.
	pushOne := func(file, content string) string {
		t.Helper()
		gitIn(t, pusher.clone, "pull", "-q", "--ff-only", "origin", "main")
		testbin.WriteFiles(t, pusher.clone, map[string]string{file: content})
		gitIn(t, pusher.clone, "add", "-A")
		gitIn(t, pusher.clone, "commit", "-q", "-m", "moved "+file)
		gitIn(t, pusher.clone, "push", "-q", "origin", "HEAD:main")
		return gitIn(t, pusher.clone, "rev-parse", "HEAD")
	}
	landPaused := func(id string, retries int) testbin.Result {
		t.Helper()
		pause := testbin.RealDir(t)
		p := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: time.Minute,
			Args: []string{"land", "-q", "--remote", "origin", "--branch", "main", "--retries", strconv.Itoa(retries), "--validate", treeRecorder(seen), id},
			Env:  hst.environ("AIRLOCK_TEST_PAUSE=land-remote:built:" + pause)})
		waitFile(t, filepath.Join(pause, "reached"))
		pushOne("other-"+id+".txt", "x\n")
		os.WriteFile(filepath.Join(pause, "continue"), nil, 0o600)
		return p.Wait()
	}

	id := hst.open(map[string]string{"a.txt": "1\n2\n3\n4\nfive\n"})
	r := landPaused(id, 3)
	if r.Code != 0 || !strings.Contains(r.Stdout, "attempts=2") {
		t.Fatalf("a landing whose remote moved once: want it landed on the second attempt\n%s", r)
	}
	on := landed(t, bare, "main")
	if len(on[id]) != 1 {
		t.Fatalf("transaction %s is on main %d times", id, len(on[id]))
	}
	tree := gitIn(t, bare, "rev-parse", on[id][0]+"^{tree}")
	saw, n := lastLine(t, filepath.Join(seen, id))
	if n != 2 || saw != tree {
		t.Errorf("validator ran %d times, last on %s; want twice, last on the landed tree %s", n, saw, tree)
	}
	if parent := gitIn(t, bare, "rev-parse", on[id][0]+"^"); parent != gitIn(t, pusher.clone, "rev-parse", "HEAD") {
		t.Errorf("landed commit's parent %s is not the head the other host pushed", parent)
	}

	id2 := hst.open(map[string]string{"b.txt": "b\n"})
	r = landPaused(id2, 0)
	if r.Code != 75 || !strings.Contains(r.Stdout, "RemoteMoved") {
		t.Fatalf("no retries left: want exit 75 RemoteMoved\n%s", r)
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != gitIn(t, pusher.clone, "rev-parse", "HEAD") {
		t.Errorf("a refused landing moved main to %s", h)
	}
	if len(landed(t, bare, "main")[id2]) != 0 {
		t.Errorf("refused transaction %s is on main", id2)
	}
	// Kept: it lands once the remote holds still.
	r = hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id2)
	if r.Code != 0 {
		t.Errorf("landing the refused transaction again:\n%s", r)
	}
}

// A landing killed after its push, before it recorded anything: landing it
// again finds it on the branch by its trailer and pushes nothing.
func TestE2ERemoteCrashAfterPush(t *testing.T) {
	srv := startDaemon(t)
	srv.seed(t, "c.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "c.git")
	hst := newRemoteHost(t, srv.url("c.git"))
	id := hst.open(map[string]string{"a.txt": "b\n"})
	r := hst.run([]string{"AIRLOCK_TEST_FAULT=land-remote:pushed"}, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Signal == 0 {
		t.Fatalf("want the landing killed at land-remote:pushed\n%s", r)
	}
	head := gitIn(t, bare, "rev-parse", "main")
	r = hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id)
	if r.Code != 0 || !strings.Contains(r.Stdout, "already  "+id+"  "+head) {
		t.Fatalf("landing again after the crash: want `already` %s\n%s", head, r)
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != head || len(landed(t, bare, "main")[id]) != 1 {
		t.Errorf("main moved to %s or holds %s twice", h, id)
	}
	show := hst.run(nil, "show", id, "--json")
	var info struct{ Status string }
	if err := json.Unmarshal([]byte(show.Stdout), &info); err != nil || info.Status != "committed" {
		t.Errorf("after finding it landed, %s is %q (%v), want committed", id, info.Status, err)
	}
	v := hst.run(nil, "receipt", "verify", id)
	if v.Code != 0 {
		t.Errorf("the receipt recorded from the note does not verify:\n%s", v)
	}
}

// TestE2ERemoteSameIDOtherHost: a commit on the branch that carries this
// transaction's id but is another transaction's (another clone opened one
// with the same --id, or any commit with that trailer) does not settle
// this one as landed: the landing fails naming the commit, nothing is
// reported committed, and the transaction is kept, its change in no tree
// but its own.
func TestE2ERemoteSameIDOtherHost(t *testing.T) {
	srv := startDaemon(t)
	srv.seed(t, "s.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "s.git")
	one, two := newRemoteHost(t, srv.url("s.git")), newRemoteHost(t, srv.url("s.git"))
	for _, x := range []*remoteHost{one, two} {
		if r := x.run(nil, "open", "--workdir", x.clone, "--id", "fix-123"); r.Code != 0 {
			t.Fatalf("open: %s", r)
		}
	}
	testbin.WriteFiles(t, one.stagedPath("fix-123"), map[string]string{"theirs.txt": "one\n"})
	testbin.WriteFiles(t, two.stagedPath("fix-123"), map[string]string{"mine.txt": "two\n"})
	if r := one.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", "fix-123"); r.Code != 0 {
		t.Fatalf("first landing: %s", r)
	}
	head := gitIn(t, bare, "rev-parse", "main")
	r := two.run(nil, "land", "-q", "--json", "--remote", "origin", "--branch", "main", "fix-123")
	if r.Code != 125 || !strings.Contains(r.Stdout+r.Stderr, "was not landed") || strings.Contains(r.Stdout, `"already": true`) {
		t.Fatalf("landing a transaction whose id another one landed under: want exit 125 saying it was not landed\n%s", r)
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != head {
		t.Errorf("main moved to %s", h)
	}
	show := two.run(nil, "show", "fix-123", "--json")
	var info struct{ Status string }
	if err := json.Unmarshal([]byte(show.Stdout), &info); err != nil || info.Status != "open" {
		t.Errorf("the second host's transaction is %q (%v), want it kept open", info.Status, err)
	}
	if !testbin.Exists(filepath.Join(two.stagedPath("fix-123"), "mine.txt")) {
		t.Errorf("the second host's change is gone from its staged workspace")
	}
}

// TestE2ERemoteURLSecretsMasked: a token given as the URL's user (the
// usual https://TOKEN@host form) or in its query is never printed, by
// airlock or by the git messages it passes on.
func TestE2ERemoteURLSecretsMasked(t *testing.T) {
	srv := startDaemon(t)
	srv.seed(t, "m.git", map[string]string{"a.txt": "a\n"})
	hst := newRemoteHost(t, srv.url("m.git"))
	id := hst.open(map[string]string{"a.txt": "b\n"})
	url := "http://ghpTOKENSECRET123@127.0.0.1:1/m.git?access_token=QSECRET456"
	for _, args := range [][]string{
		{"land", "-q", "--remote", url, "--branch", "main", id},
		{"land", "-q", "--json", "--remote", url, "--branch", "main", id},
		{"log", "--remote", url, "--branch", "main"},
		{"receipt", "verify", "--json", "--remote", url, "--branch", "main"},
	} {
		r := hst.run(nil, args...)
		if r.Code == 0 {
			t.Errorf("%q against a closed port succeeded\n%s", args, r)
		}
		for _, secret := range []string{"ghpTOKENSECRET123", "QSECRET456"} {
			if strings.Contains(r.Stdout+r.Stderr, secret) {
				t.Errorf("%q printed the URL's secret %s\n%s", args, secret, r)
			}
		}
	}
}

// TestE2ERemoteTypeChanges: a file made a directory, and a directory made
// a file, land as they would in a local commit.
func TestE2ERemoteTypeChanges(t *testing.T) {
	srv := startDaemon(t)
	srv.seed(t, "t.git", map[string]string{"a.txt": "a\n", "d/x": "x\n", "d/y": "y\n"})
	bare := filepath.Join(srv.root, "t.git")
	hst := newRemoteHost(t, srv.url("t.git"))
	id := hst.open(nil)
	staged := hst.stagedPath(id)
	for _, p := range []string{"a.txt", "d"} {
		if err := os.RemoveAll(filepath.Join(staged, p)); err != nil {
			t.Fatal(err)
		}
	}
	testbin.WriteFiles(t, staged, map[string]string{"a.txt/inner": "now a directory\n", "d": "now a file\n"})
	if r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id); r.Code != 0 {
		t.Fatalf("landing type changes: %s", r)
	}
	got := gitIn(t, bare, "ls-tree", "-r", "--name-only", "main")
	if got != "a.txt/inner\nd" {
		t.Errorf("main holds %q, want a.txt/inner and d", got)
	}
	if c := gitIn(t, bare, "show", "main:d"); c != "now a file" {
		t.Errorf("main:d = %q", c)
	}
}

// TestE2ERemoteRewoundBranchIsCaught: a branch rewound past a landing (or
// rewritten without it) still holds a chain that verifies on its own; the
// notes still hold the landing's receipt, and the check says the chain is
// broken.
func TestE2ERemoteRewoundBranchIsCaught(t *testing.T) {
	srv := startDaemon(t)
	srv.seed(t, "w.git", map[string]string{"a.txt": "a\n"})
	bare := filepath.Join(srv.root, "w.git")
	hst := newRemoteHost(t, srv.url("w.git"))
	for _, f := range []string{"f1.txt", "f2.txt"} {
		id := hst.open(map[string]string{f: f + "\n"})
		if r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", id); r.Code != 0 {
			t.Fatalf("land: %s", r)
		}
	}
	if r := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main"); r.Code != 0 {
		t.Fatalf("the chain of two landings does not verify: %s", r)
	}
	gitIn(t, bare, "update-ref", "refs/heads/main", "main~1")
	r := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
	if r.Code != 1 || !strings.Contains(r.Stdout+r.Stderr, "rewound or rewritten") {
		t.Fatalf("a branch rewound past a landing verifies: want exit 1 naming it\n%s", r)
	}
}

// TestE2ERemoteIgnoredFilesStayLocal: paths git ignores in the base's
// repository that the branch does not track (a secret .env, a build
// output) are not landed, as `git add` would not add them; the landing
// says so.
func TestE2ERemoteIgnoredFilesStayLocal(t *testing.T) {
	srv := startDaemon(t)
	srv.seed(t, "i.git", map[string]string{"a.txt": "a\n", ".gitignore": ".env\nbuild/\n"})
	bare := filepath.Join(srv.root, "i.git")
	hst := newRemoteHost(t, srv.url("i.git"))
	testbin.WriteFiles(t, hst.clone, map[string]string{".env": "secret=1\n"})
	id := hst.open(map[string]string{".env": "secret=1\nsecret=2\n", "build/out.bin": "binary\n", "a.txt": "b\n"})
	r := hst.run(nil, "land", "--remote", "origin", "--branch", "main", id)
	if r.Code != 0 {
		t.Fatalf("land: %s", r)
	}
	if got := gitIn(t, bare, "ls-tree", "-r", "--name-only", "main"); got != ".gitignore\na.txt" {
		t.Errorf("main holds %q, want only .gitignore and a.txt", got)
	}
	if !strings.Contains(r.Stderr, "not landed, as git ignores them") || !strings.Contains(r.Stderr, ".env") {
		t.Errorf("the landing does not say what it left out\n%s", r)
	}
}
