package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// doctorSupports reports whether the text output of `airlock doctor` finds
// the named check supported.
func doctorSupports(out, name string) bool {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+supported\s`).MatchString(out)
}

// nobody is the unprivileged user the rootless tests run airlock as when
// the tests themselves run as root.
const nobody = 65534

// rootless is a world whose airlock runs without root: as the user running
// the tests, or, for root, as nobody, with a base, a state root, a home and
// a copy of the binary that user owns or can execute.
type rootless struct {
	t                      *testing.T
	bin, base, state, home string
	out                    string // outside the base, for the commands' notes
	cred                   *syscall.Credential
}

func newRootless(t *testing.T, files map[string]string) *rootless {
	t.Helper()
	root, err := os.MkdirTemp("", "airlock-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if root, err = filepath.EvalSymlinks(root); err != nil {
		t.Fatal(err)
	}
	w := &rootless{t: t, bin: filepath.Join(root, "bin", "airlock"), base: filepath.Join(root, "base"),
		state: filepath.Join(root, "state"), home: filepath.Join(root, "home"), out: filepath.Join(root, "out")}
	for _, d := range []string{filepath.Dir(w.bin), w.base, w.state, w.home, w.out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testbin.WriteFiles(t, w.base, files)
	bin, err := os.ReadFile(airlockBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.bin, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		w.cred = &syscall.Credential{Uid: nobody, Gid: nobody}
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{w.base, w.state, w.home, w.out} {
			err := filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
				if err != nil {
					return err
				}
				return os.Lchown(p, nobody, nobody)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	w.needRootlessOverlay()
	return w
}

// start starts airlock as the world's user, in dir ("" is the base).
func (w *rootless) start(dir string, args ...string) *testbin.Proc {
	w.t.Helper()
	if dir == "" {
		dir = w.base
	}
	return testbin.Start(w.t, testbin.Cmd{Bin: w.bin, Args: args, Dir: dir, Cred: w.cred, Timeout: commandTimeout,
		Env: testbin.Environ(w.state, w.home, "BASE="+w.base, "OUT="+w.out)})
}

func (w *rootless) airlock(args ...string) testbin.Settled {
	w.t.Helper()
	return w.start("", args...).WaitSettled()
}

// needRootlessOverlay stops the test, naming what is missing, where
// airlock doctor (run as the world's user) finds no overlay without root:
// no user namespaces for unprivileged users, or a kernel that will not
// mount overlayfs in one. Under CI=true that fails the test.
func (w *rootless) needRootlessOverlay() {
	w.t.Helper()
	r := w.airlock("doctor", "--json")
	if r.Code != 0 {
		w.t.Fatalf("airlock doctor failed:\n%s", r)
	}
	var doc struct {
		Checks []struct {
			Name      string `json:"name"`
			Supported bool   `json:"supported"`
			Reason    string `json:"reason"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		w.t.Fatalf("airlock doctor --json: %v\n%s", err, r)
	}
	for _, c := range doc.Checks {
		if c.Name == "overlay-rootless" {
			if !c.Supported {
				testbin.Missing(w.t, "overlayfs in an unprivileged user namespace is unavailable here (airlock doctor: %s)", c.Reason)
			}
			return
		}
	}
	w.t.Fatalf("airlock doctor --json has no overlay-rootless check:\n%s", r.Stdout)
}

// noLayers checks that the transaction left neither its mount point nor
// its overlay layers in the state directory.
func (w *rootless) noLayers(tx string) {
	w.t.Helper()
	for _, p := range []string{"staged", "staged.overlay"} {
		if testbin.Exists(filepath.Join(w.state, "tx", tx, p)) {
			w.t.Errorf("%s of transaction %s is still in the state directory after it settled", p, tx)
		}
	}
}

var rootlessBase = map[string]string{
	"keep": "keep\n", "m": "m\n", "gone": "gone\n",
	"d/x": "x\n", "d/sub/z": "z\n", "r/o": "o\n",
}

// TestE2ERootlessOverlayCommits: without root, run --backend overlay
// mounts the overlay in the command's own namespace, the command sees it
// at the base's path, and every kind of change (add, modify, delete, a
// directory replaced by a new one, which overlayfs marks opaque with
// user.overlay.opaque, and a renamed directory) lands by the commit.
func TestE2ERootlessOverlayCommits(t *testing.T) {
	w := newRootless(t, rootlessBase)
	r := w.airlock("run", "--backend", "overlay", "--id", "rl", "--", "sh", "-c",
		`set -e; [ "$(pwd -P)" = "$BASE" ]; [ "$(cat "$BASE/d/x")" = x ]
echo new > n; echo mod > "$BASE/m"; rm gone; rm -r d; mkdir d; echo y > d/y; mv r r2`)
	wantCode(t, r, 0)
	if strings.Contains(r.Stderr, "same-path mode unavailable") {
		t.Errorf("same-path mode fell back:\n%s", r.Stderr)
	}
	wantBlock(t, r, map[string]string{"outcome": "committed", "added": "3", "modified": "1", "deleted": "4"}) // files and symlinks, as git counts
	want := map[string]string{"keep": "keep\n", "m": "mod\n", "n": "new\n", "d/y": "y\n", "r2/o": "o\n"}
	for p, c := range want {
		if got := testbin.ReadFile(t, filepath.Join(w.base, p)); got != c {
			t.Errorf("%s = %q after the commit, want %q", p, got, c)
		}
	}
	for _, p := range []string{"gone", "d/x", "d/sub", "r"} {
		if testbin.Exists(filepath.Join(w.base, p)) {
			t.Errorf("%s is still in the base after the commit", p)
		}
	}
	if w.cred != nil {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(w.base, "n"), &st); err != nil || st.Uid != nobody {
			t.Errorf("n: owner %d (%v), want the unprivileged user %d", st.Uid, err, nobody)
		}
	}
	w.noLayers("rl")
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), w.state) {
		t.Errorf("a mount under the state directory reached this namespace:\n%s", mi)
	}
}

// TestE2ERootlessOverlayDiscards: a command that fails leaves the base as
// it was, and its layers go.
func TestE2ERootlessOverlayDiscards(t *testing.T) {
	w := newRootless(t, rootlessBase)
	r := w.airlock("run", "--backend", "overlay", "--id", "rl", "--", "sh", "-c", `echo z > m; rm -r d; exit 3`)
	wantCode(t, r, 3)
	wantBlock(t, r, map[string]string{"outcome": "discarded"})
	if got := testbin.ReadFile(t, filepath.Join(w.base, "m")); got != "m\n" {
		t.Errorf("m = %q after the discard", got)
	}
	if !testbin.Exists(filepath.Join(w.base, "d", "sub", "z")) {
		t.Error("d/sub/z is gone from the base after the discard")
	}
	w.noLayers("rl")
}

// TestE2ERootlessOverlayLeftRunning: a process the command leaves running
// keeps its namespace, and with it the mount, alive; the transaction
// settles all the same, and what the process writes afterwards reaches
// neither the base nor the state directory.
func TestE2ERootlessOverlayLeftRunning(t *testing.T) {
	w := newRootless(t, rootlessBase)
	script := `(while [ ! -e "$OUT/go" ]; do sleep 0.05; done; echo late > late; echo late > "$BASE/m"; touch "$OUT/done") </dev/null >/dev/null 2>&1 &
echo $! > "$OUT/pid"; echo early > early`
	r := w.airlock("run", "--backend", "overlay", "--id", "rl", "--", "sh", "-c", script)
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "added": "1", "modified": "0", "deleted": "0"})
	w.noLayers("rl")
	pid := strings.TrimSpace(testbin.ReadFile(t, filepath.Join(w.out, "pid")))
	if !testbin.Exists("/proc/" + pid) {
		t.Fatalf("the process left running (pid %s) is gone before the test let it write", pid)
	}
	if err := os.WriteFile(filepath.Join(w.out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testbin.WaitFile(filepath.Join(w.out, "done"), time.Minute, nil); err != nil {
		t.Fatalf("the process left running never finished its late writes: %v", err)
	}
	if testbin.Exists(filepath.Join(w.base, "late")) {
		t.Error("a write made after the commit, through the command's namespace, reached the base")
	}
	if got := testbin.ReadFile(t, filepath.Join(w.base, "m")); got != "m\n" {
		t.Errorf("m = %q: a write made after the commit reached the base", got)
	}
	if got := testbin.ReadFile(t, filepath.Join(w.base, "early")); got != "early\n" {
		t.Errorf("early = %q after the commit", got)
	}
	w.noLayers("rl")
}

// TestE2ERootlessOverlayOpenRefuses: open has no command whose namespace
// could host the mount, so without root it refuses in one line that says
// so and what to use instead, and leaves no transaction.
func TestE2ERootlessOverlayOpenRefuses(t *testing.T) {
	w := newRootless(t, rootlessBase)
	r := w.airlock("open", "--backend", "overlay", "--id", "op")
	if r.Code == 0 {
		t.Fatalf("open --backend overlay without root succeeded:\n%s", r)
	}
	msg := strings.TrimSpace(r.Stderr)
	if strings.Contains(msg, "\n") {
		t.Errorf("the refusal is not one line:\n%s", msg)
	}
	for _, s := range []string{"overlay needs root for open", "no command to host", "airlock run --backend overlay"} {
		if !strings.Contains(msg, s) {
			t.Errorf("the refusal does not say %q:\n%s", s, msg)
		}
	}
	if testbin.Exists(filepath.Join(w.state, "tx", "op")) {
		t.Error("the refused open left a transaction directory")
	}
}
