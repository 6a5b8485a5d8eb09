package main_test

import (
	"encoding/json"
	"fmt"
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
	w := newRootlessWorld(t, files)
	w.needRootlessOverlay()
	return w
}

// newRootlessWorld is newRootless without the need for overlay.
func newRootlessWorld(t *testing.T, files map[string]string) *rootless {
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
// would keep its namespace, and with it the mount, alive; the run ends it
// (its command runs contained) before the transaction settles, names it in
// left_running, and nothing is left to write into the layers or the base
// after the commit.
func TestE2ERootlessOverlayLeftRunning(t *testing.T) {
	w := newRootless(t, rootlessBase)
	if r := w.airlock("doctor"); !doctorSupports(r.Stdout, "contain") {
		testbin.Missing(t, "a user who is not root cannot contain run's command here (no user and PID namespace):\n%s", r.Stdout)
	}
	tag := fmt.Sprintf("airlock-overlay-leftover-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { killAll(tag) })
	script := `sh -c 'touch "$OUT/started"; while [ ! -e "$OUT/go" ]; do sleep 0.01; done; echo late > late; echo late > "$BASE/m"; touch "$OUT/done"' "$0" </dev/null >/dev/null 2>&1 &
while [ ! -e "$OUT/started" ]; do sleep 0.01; done; echo early > early`
	r := w.airlock("run", "--backend", "overlay", "--id", "rl", "--", "sh", "-c", script, tag)
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "added": "1", "modified": "0", "deleted": "0"})
	w.noLayers("rl")
	if left := runningWith(tag); len(left) > 0 {
		t.Fatalf("processes %v the command left are still running after its run settled", left)
	}
	if show := w.airlock("show", "rl", "--json"); !strings.Contains(show.Stdout, "left_running") {
		t.Errorf("the settle did not name the process the command left running:\n%s", show.Stdout)
	}
	// Were it still running, it would write now.
	if err := os.WriteFile(filepath.Join(w.out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if testbin.Exists(filepath.Join(w.out, "done")) || testbin.Exists(filepath.Join(w.base, "late")) {
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

// TestE2ERootlessCommandHasNoCapabilities: without root, the command runs
// in a user namespace whose helper held CAP_SYS_ADMIN there to mount; the
// command holds no capability at all (effective, permitted, inheritable,
// ambient), so it cannot unmount the staged tree shown at the base's path
// and write the real base behind it. Each of the helper's threads held the
// capabilities: dropping them on one thread while another forks or execs
// the command left it CAP_SYS_ADMIN. The copy and overlay backends, and a
// validator, which runs the same way.
func TestE2ERootlessCommandHasNoCapabilities(t *testing.T) {
	w := newRootlessWorld(t, map[string]string{"a": "a\n"})
	if r := w.airlock("doctor"); !doctorSupports(r.Stdout, "contain") {
		testbin.Missing(t, "no PID namespace without root here (airlock doctor: contain unsupported)")
	}
	// What the command would do with CAP_SYS_ADMIN: uncover the base and
	// write it directly, then fail so nothing is committed.
	escape := `grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status > "$OUT/$1"; umount -l "$BASE" 2>/dev/null; echo direct > "$BASE/direct-$1" 2>/dev/null; exit 1`
	backends := []string{"copy"}
	if r := w.airlock("doctor"); doctorSupports(r.Stdout, "overlay-rootless") {
		backends = append(backends, "overlay")
	}
	for _, b := range backends {
		r := w.airlock("run", "--backend", b, "--", "sh", "-c", escape, "sh", b)
		if r.Code != 1 {
			t.Fatalf("run --backend %s: exit %d, want the command's 1\n%s", b, r.Code, r)
		}
	}
	// A validator's environment is the project's, not the caller's: the
	// paths are spelled out.
	v := strings.NewReplacer(`"$OUT/$1"`, filepath.Join(w.out, "validator"), `"$BASE/direct-$1"`, filepath.Join(w.base, "direct-validator"), `"$BASE"`, w.base).Replace(escape)
	must(t, os.WriteFile(filepath.Join(w.base, ".airlock.toml"), []byte("validate = "+fmt.Sprintf("%q", `sh -c '`+strings.ReplaceAll(v, `'`, `'"'"'`)+`'`)+"\n"), 0o644))
	must(t, os.Lchown(filepath.Join(w.base, ".airlock.toml"), nobody, nobody))
	r := w.airlock("run", "--approve", "--", "sh", "-c", "echo b > b")
	if r.Code == 0 {
		t.Fatalf("run with a validator that fails: exit 0\n%s", r)
	}
	for _, name := range append(backends, "validator") {
		caps, err := os.ReadFile(filepath.Join(w.out, name))
		if err != nil {
			t.Errorf("%s: the command did not run: %v\n%s", name, err, r)
			continue
		}
		for _, l := range strings.Split(strings.TrimSpace(string(caps)), "\n") {
			if f := strings.Fields(l); len(f) != 2 || strings.Trim(f[1], "0") != "" {
				t.Errorf("%s: the command holds capabilities: %s", name, l)
			}
		}
		if testbin.Exists(filepath.Join(w.base, "direct-"+name)) {
			t.Errorf("%s: the command wrote the real base outside the transaction", name)
		}
	}
}
