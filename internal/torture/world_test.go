package torture

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// world is one test's setting: a base, a state root beside it (never
// inside), and a home directory.
type world struct {
	t     *testing.T
	root  string
	base  string
	state string
	home  string
	env   []string // extra variables for every airlock run
	wrap  []string // a command airlock runs under (setpriv ...), if any
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldIn(t, testbin.RealDir(t))
}

// newWorldIn lays a world out in root, an empty directory.
func newWorldIn(t *testing.T, root string) *world {
	t.Helper()
	w := &world{t: t, root: root, base: filepath.Join(root, "base"), state: filepath.Join(root, "state"), home: filepath.Join(root, "home")}
	for _, d := range []string{w.base, w.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// environ is the environment of every airlock process (testbin.Environ),
// with the world's own extra variables.
func (w *world) environ(extra ...string) []string {
	return testbin.Environ(w.state, w.home, append(append([]string(nil), w.env...), extra...)...)
}

// result is how one airlock process ended, with its settle block.
type result = testbin.Settled

// processTimeout bounds every process a test starts (times the soak
// multiplier): a hang is a failure, not a stuck run.
const processTimeout = 2 * time.Minute

// cmd is airlock with args as the world runs it: from the home directory,
// under the world's wrap if any.
func (w *world) cmd(env []string, args ...string) testbin.Cmd {
	c := testbin.Cmd{Bin: bin, Args: args, Dir: w.home, Env: w.environ(env...), Timeout: processTimeout * time.Duration(soak())}
	if len(w.wrap) > 0 {
		c.Bin, c.Args = w.wrap[0], append(append(w.wrap[1:len(w.wrap):len(w.wrap)], bin), args...)
	}
	return c
}

func (w *world) start(env []string, args ...string) *testbin.Proc {
	w.t.Helper()
	return testbin.Start(w.t, w.cmd(env, args...))
}

// airlock runs airlock to completion.
func (w *world) airlock(args ...string) result {
	w.t.Helper()
	return w.start(nil, args...).WaitSettled()
}

// airlockEnv runs airlock with extra environment variables.
func (w *world) airlockEnv(env []string, args ...string) result {
	w.t.Helper()
	return w.start(env, args...).WaitSettled()
}

// must runs airlock and fails the test unless it exits 0.
func (w *world) must(args ...string) result {
	w.t.Helper()
	r := w.airlock(args...)
	if r.Code != 0 {
		w.t.Fatalf("%v", r)
	}
	return r
}

// open opens a transaction over the world's base and returns the staged
// path.
func (w *world) open(id string, flags ...string) string {
	w.t.Helper()
	r := w.must(append([]string{"open", "--workdir", w.base, "--id", id}, flags...)...)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 2 || lines[0] != id {
		w.t.Fatalf("open printed %q, want the id and the staged path", r.Stdout)
	}
	return lines[1]
}

// txDir is a transaction's state directory.
func (w *world) txDir(id string) string { return filepath.Join(w.state, "tx", id) }

// status is a transaction's status as `airlock show --json` reports it.
func (w *world) status(id string) string {
	w.t.Helper()
	r := w.must("show", id, "--json")
	var v struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		w.t.Fatalf("show %s --json: %v\n%s", id, err, r.Stdout)
	}
	return v.Status
}

// wantRefusal fails unless r is a refusal (exit 75) of the given kind.
func wantRefusal(t *testing.T, r result, kind string) {
	t.Helper()
	if r.Code != 75 || r.Settle["refusal"] != kind {
		t.Fatalf("want a %s refusal (exit 75), got %v", kind, r)
	}
}

// wantFailure fails unless airlock failed itself (exit 125) with a message
// that names want.
func wantFailure(t *testing.T, r result, want string) {
	t.Helper()
	if r.Code != 125 || !strings.Contains(r.Stderr, want) {
		t.Fatalf("want exit 125 naming %q, got %v", want, r)
	}
}

// memDir is an empty directory on a tmpfs (/dev/shm), removed after the
// test, or "" when there is none. fsync costs nothing there, so that tests
// of process crashes (not power loss: the page cache survives a SIGKILL)
// can run many more iterations.
func memDir(t *testing.T) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != 0x01021994 { // TMPFS_MAGIC
		return ""
	}
	d, err := os.MkdirTemp("/dev/shm", "airlock-torture-")
	if err != nil {
		return ""
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// outside makes a directory beside the base, with a few files, for
// attacks to aim at, and returns its path.
func (w *world) outside() string {
	w.t.Helper()
	d := filepath.Join(w.root, "outside")
	if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
		w.t.Fatal(err)
	}
	for _, f := range []string{"x", "secret", "sub/y"} {
		if err := os.WriteFile(filepath.Join(d, f), []byte("outside "+f+"\n"), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	return d
}

// world snapshots everything of the world but the base and the state root:
// what no commit may change.
func (w *world) world() tree {
	w.t.Helper()
	return snapshotSkip(w.t, w.root, map[string]bool{"base": true, "state": true})
}

// untouched fails if anything outside the base and the state root changed
// since before was taken, or if a file an attack aimed at in /etc exists.
func (w *world) untouched(before tree) {
	w.t.Helper()
	if got := w.world(); !got.equal(before) {
		w.t.Fatalf("something outside the base changed:\n%s", before.diff(got, 10))
	}
	for _, p := range []string{"/etc/x", "/x", filepath.Join(filepath.Dir(w.root), "x")} {
		if _, err := os.Lstat(p); err == nil {
			w.t.Fatalf("%s exists: a write escaped the base", p)
		}
	}
}

// beforeOrAfter fails unless the base is exactly before or exactly after,
// and says which.
func (w *world) beforeOrAfter(before, after tree) string {
	w.t.Helper()
	got := snapshot(w.t, w.base)
	switch {
	case got.equal(before):
		return "before"
	case after != nil && got.equal(after):
		return "after"
	}
	msg := "the base is neither exactly before nor exactly after\nagainst before:\n" + before.diff(got, 10)
	if after != nil {
		msg += "\nagainst after:\n" + after.diff(got, 10)
	}
	w.t.Fatal(msg)
	return ""
}

// commitPausedAt runs `airlock commit id`, paused at the fault point (the
// tagged build's AIRLOCK_TEST_PAUSE), runs during while it waits there,
// lets it go on and returns how it ended: an interleaving made exact.
func (w *world) commitPausedAt(point, id string, during func()) result {
	w.t.Helper()
	pause := w.t.TempDir()
	p := w.start([]string{"AIRLOCK_TEST_PAUSE=" + point + ":" + pause}, "commit", id)
	waitFile(w.t, filepath.Join(pause, "reached"), p)
	during()
	check(w.t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o644))
	return p.WaitSettled()
}
