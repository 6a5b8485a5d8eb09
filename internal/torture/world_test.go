package torture

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Shared test helpers (internal/testbin).
var (
	realDir = testbin.RealDir
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
	return newWorldIn(t, realDir(t))
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

// result is how one airlock process ended.
type result struct {
	args   []string
	stdout string
	stderr string
	code   int // -1 when killed by a signal
	signal syscall.Signal
}

func (r result) String() string {
	return "airlock " + strings.Join(r.args, " ") + ": exit " + strconv.Itoa(r.code) + " (signal " + r.signal.String() + ")\nstdout:\n" + r.stdout + "\nstderr:\n" + r.stderr
}

// block is the airlock.* key=value block of stderr.
func (r result) block() map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(r.stderr, "\n") {
		k, v, ok := strings.Cut(l, "=")
		if ok && strings.HasPrefix(k, "airlock.") {
			m[strings.TrimPrefix(k, "airlock.")] = v
		}
	}
	return m
}

// proc is an airlock process started and not yet waited for.
type proc struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	err    bytes.Buffer
	args   []string
	cancel context.CancelFunc
	done   chan struct{} // closed when the process has ended
	res    result
}

// processTimeout bounds every process a test starts (times the soak
// multiplier): a hang is a failure, not a stuck run.
const processTimeout = 2 * time.Minute

func (w *world) start(env []string, args ...string) *proc {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processTimeout*time.Duration(soak()))
	p := &proc{args: args, cancel: cancel}
	if len(w.wrap) > 0 {
		p.cmd = exec.CommandContext(ctx, w.wrap[0], append(append(w.wrap[1:], bin), args...)...)
	} else {
		p.cmd = exec.CommandContext(ctx, bin, args...)
	}
	p.cmd.Dir = w.home
	p.cmd.Env = w.environ(env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	if err := p.cmd.Start(); err != nil {
		cancel()
		w.t.Fatalf("start airlock %q: %v", args, err)
	}
	p.done = make(chan struct{})
	go func() {
		p.res = p.reap()
		close(p.done)
	}()
	w.t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for the process to end.
func (p *proc) wait() result {
	<-p.done
	return p.res
}

// ended reports whether the process has ended.
func (p *proc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) reap() result {
	err := p.cmd.Wait()
	p.cancel()
	r := result{args: p.args, stdout: p.out.String(), stderr: p.err.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.signal = ws.Signal()
		}
	default:
		r.code = -2
		r.stderr += "\n(wait: " + err.Error() + ")"
	}
	return r
}

// airlock runs airlock to completion.
func (w *world) airlock(args ...string) result {
	w.t.Helper()
	return w.start(nil, args...).wait()
}

// airlockEnv runs airlock with extra environment variables.
func (w *world) airlockEnv(env []string, args ...string) result {
	w.t.Helper()
	return w.start(env, args...).wait()
}

// must runs airlock and fails the test unless it exits 0.
func (w *world) must(args ...string) result {
	w.t.Helper()
	r := w.airlock(args...)
	if r.code != 0 {
		w.t.Fatalf("%v", r)
	}
	return r
}

// open opens a transaction over the world's base and returns the staged
// path.
func (w *world) open(id string, flags ...string) string {
	w.t.Helper()
	r := w.must(append([]string{"open", "--workdir", w.base, "--id", id}, flags...)...)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || lines[0] != id {
		w.t.Fatalf("open printed %q, want the id and the staged path", r.stdout)
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
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		w.t.Fatalf("show %s --json: %v\n%s", id, err, r.stdout)
	}
	return v.Status
}

// wantRefusal fails unless r is a refusal (exit 75) of the given kind.
func wantRefusal(t *testing.T, r result, kind string) {
	t.Helper()
	if r.code != 75 || r.block()["refusal"] != kind {
		t.Fatalf("want a %s refusal (exit 75), got %v", kind, r)
	}
}

// wantFailure fails unless airlock failed itself (exit 125) with a message
// that names want.
func wantFailure(t *testing.T, r result, want string) {
	t.Helper()
	if r.code != 125 || !strings.Contains(r.stderr, want) {
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
