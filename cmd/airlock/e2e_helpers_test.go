package main_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	statepkg "github.com/airlockdev/airlock/internal/state"
	"github.com/airlockdev/airlock/internal/testbin"
)

// airlockBin is the binary every scenario drives; TestMain builds it once.
var airlockBin string

func TestMain(m *testing.M) {
	// A part the test binary plays for a test (see parts), instead of
	// running the tests: its first argument says which.
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], partPrefix) {
		playPart(strings.TrimPrefix(os.Args[1], partPrefix), os.Args[2:])
	}
	os.Exit(testbin.Main(m, &airlockBin))
}

// commandTimeout bounds every process a scenario starts, so that a hang is
// a failure, not a stuck test run.
const commandTimeout = 30 * time.Second

// h is one scenario's world: a base, a state root outside it, and a home
// directory, each its own temporary directory.
type h struct {
	t     *testing.T
	base  string
	state string
	home  string
	env   []string // extra variables for every airlock run
	// oracleDir is where the last oracle ran.
	oracleDir string
}

func newH(t *testing.T) *h {
	t.Helper()
	x := &h{t: t, base: testbin.RealDir(t), state: filepath.Join(testbin.RealDir(t), "state"), home: testbin.RealDir(t)}
	return x
}

// environ is the environment of every process a scenario starts
// (testbin.Environ), with the scenario's own extra variables.
func (x *h) environ(extra ...string) []string {
	return testbin.Environ(x.state, x.home, append(append([]string(nil), x.env...), extra...)...)
}

// result is how one airlock invocation ended, with its settle block.
type result = testbin.Settled

// run is one invocation of a command-line tool.
type run struct {
	dir  string   // working directory; "" means the scenario's home
	env  []string // extra environment
	args []string
	bin  string // the airlock binary; "" means airlockBin
	// newSession starts airlock in a session of its own, without a
	// controlling terminal, as a supervisor or agent harness would.
	newSession bool
	// timeout bounds the process; 0 means commandTimeout.
	timeout time.Duration
}

// airlock runs the binary from the scenario's home directory.
func (x *h) airlock(args ...string) result {
	x.t.Helper()
	return x.exec(run{args: args})
}

// airlockEnv runs the binary with extra environment variables.
func (x *h) airlockEnv(env []string, args ...string) result {
	x.t.Helper()
	return x.exec(run{env: env, args: args})
}

func (x *h) exec(r run) result {
	x.t.Helper()
	return x.start(r).WaitSettled()
}

// proc is an airlock process a scenario started and has not waited for.
type proc = *testbin.Proc

func (x *h) start(r run) proc {
	x.t.Helper()
	c := testbin.Cmd{Bin: r.bin, Args: r.args, Dir: r.dir, Env: x.environ(r.env...), Timeout: commandTimeout}
	if r.timeout != 0 {
		c.Timeout = r.timeout
	}
	if c.Bin == "" {
		c.Bin = airlockBin
	}
	if c.Dir == "" {
		c.Dir = x.home
	}
	c.Setsid = r.newSession
	return testbin.Start(x.t, c)
}

// blockKeys are SPEC.md's block keys, in order.
var blockKeys = []string{"tx", "outcome", "added", "modified", "deleted", "refusal", "refused_paths",
	"merged_paths", "base_digest", "result_digest", "diff_digest", "receipt", "branch", "branch_head", "not_transactional"}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// wantBlock checks the settle block: every key present, and the given
// values exact.
func wantBlock(t *testing.T, r result, want map[string]string) {
	t.Helper()
	if r.Settle == nil {
		t.Fatalf("no airlock.* block on stderr\n%s", r)
	}
	for _, k := range blockKeys {
		if _, ok := r.Settle[k]; !ok {
			t.Errorf("block has no airlock.%s\n%s", k, r)
		}
	}
	if len(r.Settle) != len(blockKeys) {
		t.Errorf("block has %d lines, want %d\n%s", len(r.Settle), len(blockKeys), r)
	}
	for k, v := range want {
		if got := r.Settle[k]; got != v {
			t.Errorf("airlock.%s = %q, want %q\n%s", k, got, v, r)
		}
	}
	if got := r.Settle["not_transactional"]; got != "network,databases,processes,outside_surface" {
		t.Errorf("airlock.not_transactional = %q", got)
	}
	for _, k := range []string{"base_digest", "result_digest", "diff_digest"} {
		if v := r.Settle[k]; !digestRE.MatchString(v) {
			t.Errorf("airlock.%s = %q, not sha256:<64 hex>", k, v)
		}
	}
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit code %d, want %d\n%s", r.Code, code, r)
	}
}

// --- trees ---

// node is one entry of a tree, as a snapshot compares it.
type node struct {
	Kind    string // "file", "dir", "symlink", "fifo", "other"
	Mode    fs.FileMode
	Content string
	Target  string
}

func (n node) String() string {
	switch n.Kind {
	case "file":
		c := n.Content
		if len(c) > 40 {
			c = c[:40] + "..."
		}
		return fmt.Sprintf("file %04o %q", n.Mode, c)
	case "symlink":
		return fmt.Sprintf("symlink -> %q", n.Target)
	}
	return fmt.Sprintf("%s %04o", n.Kind, n.Mode)
}

// tree maps slash-separated relative paths to entries.
type tree map[string]node

func F(mode fs.FileMode, content string) node {
	return node{Kind: "file", Mode: mode, Content: content}
}
func D(mode fs.FileMode) node { return node{Kind: "dir", Mode: mode} }
func L(target string) node    { return node{Kind: "symlink", Target: target} }
func P() node                 { return node{Kind: "fifo", Mode: 0o644} }

// build creates spec under dir. Missing parents are made 0755; directory
// modes are set last, deepest first, so that a restrictive mode cannot get
// in the way.
func build(t *testing.T, dir string, spec tree) {
	t.Helper()
	paths := make([]string, 0, len(spec))
	for p := range spec {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		n := spec[p]
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch n.Kind {
		case "file":
			err = os.WriteFile(full, []byte(n.Content), 0o600)
			if err == nil {
				err = os.Chmod(full, n.Mode)
			}
		case "dir":
			err = os.MkdirAll(full, 0o755)
		case "symlink":
			err = os.Symlink(n.Target, full)
		case "fifo":
			err = syscall.Mkfifo(full, uint32(n.Mode))
			if err == nil {
				err = os.Chmod(full, n.Mode)
			}
		default:
			t.Fatalf("build: unknown kind %q for %s", n.Kind, p)
		}
		if err != nil {
			t.Fatalf("build %s: %v", p, err)
		}
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if n := spec[paths[i]]; n.Kind == "dir" {
			if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(paths[i])), n.Mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// snapshot reads dir (not following symlinks) into a tree. skip, if set,
// leaves out a path and everything under it.
func snapshot(t *testing.T, dir string, skip func(rel string) bool) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		n := node{Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
		switch m := fi.Mode(); {
		case m.IsRegular():
			n.Kind = "file"
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			n.Content = string(b)
		case m.IsDir():
			n.Kind = "dir"
		case m&fs.ModeSymlink != 0:
			n.Kind = "symlink"
			n.Mode = 0
			if n.Target, err = os.Readlink(path); err != nil {
				return err
			}
		case m&fs.ModeNamedPipe != 0:
			n.Kind = "fifo"
		default:
			n.Kind = "other"
		}
		out[rel] = n
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

// treeDiff lists how got differs from want, one line per path.
func treeDiff(want, got tree) []string {
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var d []string
	for _, p := range paths {
		w, wok := want[p]
		g, gok := got[p]
		switch {
		case !gok:
			d = append(d, fmt.Sprintf("%q: missing (want %s)", p, w))
		case !wok:
			d = append(d, fmt.Sprintf("%q: unexpected %s", p, g))
		case w != g:
			d = append(d, fmt.Sprintf("%q: %s, want %s", p, g, w))
		}
	}
	return d
}

func wantTree(t *testing.T, what string, want, got tree) {
	t.Helper()
	if d := treeDiff(want, got); len(d) > 0 {
		t.Errorf("%s differs (%d paths):\n  %s", what, len(d), strings.Join(d, "\n  "))
	}
}

// counts is what a change set from before to after adds, modifies and
// deletes, as git counts it: files and symlinks, path by path. A directory
// is modified only by its own kind or mode, and added or deleted counts
// only when no other changed path lies beneath it (an empty directory).
func counts(before, after tree) (added, modified, deleted int) {
	changed := map[string]bool{}
	for p, a := range after {
		if b, ok := before[p]; !ok || a != b {
			changed[p] = true
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			changed[p] = true
		}
	}
	holds := func(dir string) bool {
		for p := range changed {
			if strings.HasPrefix(p, dir+"/") {
				return true
			}
		}
		return false
	}
	for p := range changed {
		a, inAfter := after[p]
		b, inBefore := before[p]
		switch {
		case !inBefore:
			if a.Kind != "dir" || !holds(p) {
				added++
			}
		case !inAfter:
			if b.Kind != "dir" || !holds(p) {
				deleted++
			}
		default:
			modified++
		}
	}
	return
}

func itoa(n int) string { return fmt.Sprint(n) }

// oracle copies base with cp -a and runs script there with sh, the same
// way airlock's command will run it; it returns the resulting tree.
func (x *h) oracle(script string, env ...string) tree {
	x.t.Helper()
	dir := filepath.Join(testbin.RealDir(x.t), "oracle")
	if out, err := exec.Command("cp", "-a", x.base, dir).CombinedOutput(); err != nil {
		x.t.Fatalf("cp -a: %v\n%s", err, out)
	}
	if r := testbin.Run(x.t, testbin.Cmd{Bin: "sh", Args: []string{"-c", script}, Dir: dir, Env: x.environ(env...), Timeout: commandTimeout}); r.Code != 0 {
		x.t.Fatalf("oracle script failed: %v", r)
	}
	x.oracleDir = dir
	return snapshot(x.t, dir, nil)
}

// waitFile waits for path to exist: the other side of a readiness
// handshake (a pause point's reached, a command's ready file).
func waitFile(t *testing.T, path string) {
	t.Helper()
	if err := testbin.WaitFile(path, commandTimeout, nil); err != nil {
		t.Fatalf("%v (for %v)", err, commandTimeout)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stagedPath is the staged workspace recorded in a transaction's open
// record.
func (x *h) stagedPath(id string) string {
	x.t.Helper()
	var rec struct {
		Staged json.RawMessage `json:"staged"`
	}
	b, err := os.ReadFile(filepath.Join(x.state, "tx", id, "open.json"))
	if err != nil {
		x.t.Fatalf("open record of %s: %v", id, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		x.t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal(rec.Staged, &s); err != nil {
		x.t.Fatalf("staged path of %s is not a plain string: %s", id, rec.Staged)
	}
	return s
}

// oneLine checks that stderr is exactly one "airlock: " line and that it
// mentions every word.
func oneLine(t *testing.T, r result, words ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "airlock: ") {
		t.Errorf("want one `airlock: ...` line on stderr, got %d lines\n%s", len(lines), r)
	}
	for _, w := range words {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("stderr does not mention %q\n%s", w, r)
		}
	}
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// backdate sets the times of everything under dir (not following
// symlinks) to age ago, out of every racy window.
func backdate(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	old := time.Now().Add(-age)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chtimes(path, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// procByArgv returns a pidfd of the one process whose command line is
// argv, found through /proc (it may run in namespaces of its own). The
// pidfd names that process and no other, even once its pid is reused; the
// test's cleanup kills the process if it is still alive then.
func procByArgv(t *testing.T, argv ...string) int {
	t.Helper()
	want := strings.Join(argv, "\x00") + "\x00"
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && string(b) == want {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 1 {
		t.Fatalf("%d processes run %q, want 1: %v", len(pids), argv, pids)
	}
	fd, err := unix.PidfdOpen(pids[0], 0)
	if err != nil {
		t.Fatalf("pidfd_open %d (%q): %v", pids[0], argv, err)
	}
	t.Cleanup(func() {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		unix.Close(fd)
	})
	return fd
}

// ended waits up to d for the process of pidfd to end, and reports
// whether it did.
func ended(t *testing.T, pidfd int, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(max(time.Until(deadline), 0)/time.Millisecond))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			t.Fatalf("poll a pidfd: %v", err)
		}
		return n > 0
	}
}

// waitPastClock returns once airlock, measuring the base's timestamps the
// way a transaction on state root state does (its cached clock, measured
// now if need be), proves the named base files unchanged by stat alone.
func waitPastClock(t *testing.T, state, base string, rels ...string) {
	t.Helper()
	st, err := statepkg.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, len(rels))
	for i, r := range rels {
		paths[i] = filepath.Join(base, r)
	}
	testbin.PastWindow(t, base, st.Clock().WindowNs(), paths...)
}
