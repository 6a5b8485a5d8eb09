package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// recycleShow is the part of `show --json` these tests read.
type recycleShow struct {
	Status   string `json:"status"`
	Recycled *struct {
		From    string `json:"from"`
		Kept    int    `json:"kept"`
		Copied  int    `json:"copied"`
		Removed int    `json:"removed"`
	} `json:"recycled"`
	NotRecycled string `json:"not_recycled"`
	Added       int    `json:"added"`
}

func (x *h) showRecycle(id string) recycleShow {
	x.t.Helper()
	r := x.airlock("show", id, "--json")
	wantCode(x.t, r, 0)
	var s recycleShow
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		x.t.Fatalf("show --json: %v\n%s", err, r.Stdout)
	}
	return s
}

// TestE2ERecycledRun: the second run over a base refreshes the first run's
// tree instead of copying the base again, and its command sees exactly the
// base, with the first run's committed change and nothing else.
func TestE2ERecycledRun(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n"), "sub/g": F(0o644, "g\n"), "sub/h": F(0o755, "h\n"), "link": L("sub/g")})
	backdate(t, x.base, time.Hour)
	r1 := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo new > added.txt; echo mod > f; rm sub/h")
	wantBlock(t, r1, map[string]string{"outcome": "committed", "added": "1", "modified": "1", "deleted": "1"})
	id1 := r1.Settle["tx"]
	// The base moves on between the runs.
	writeFile(t, filepath.Join(x.base, "sub/g"), "g changed in the base\n")
	r2 := x.airlock("run", "--workdir", x.base, "--", "sh", "-c",
		`set -e; [ "$(cat f)" = mod ]; [ "$(cat added.txt)" = new ]; [ ! -e sub/h ]; [ "$(cat link)" = "g changed in the base" ]; [ "$(ls -A | tr '\n' ' ')" = "added.txt f link sub " ]`)
	wantBlock(t, r2, map[string]string{"outcome": "no_changes"})
	s := x.showRecycle(r2.Settle["tx"])
	if s.Recycled == nil || s.Recycled.From != id1 {
		t.Fatalf("second run: recycled = %+v (not_recycled %q), want the tree of %s", s.Recycled, s.NotRecycled, id1)
	}
	if s.Recycled.Copied > 4 {
		t.Errorf("second run copied %d entries; only the ones that changed differ", s.Recycled.Copied)
	}
	text := x.airlock("show", r2.Settle["tx"])
	if !strings.Contains(text.Stdout, "recycled:  the tree of "+id1) {
		t.Errorf("show does not say the tree was recycled:\n%s", text.Stdout)
	}
	// --fresh copies afresh.
	r3 := x.airlock("run", "--fresh", "--workdir", x.base, "--", "true")
	wantBlock(t, r3, map[string]string{"outcome": "no_changes"})
	if s := x.showRecycle(r3.Settle["tx"]); s.Recycled != nil {
		t.Errorf("run --fresh recycled %+v", s.Recycled)
	}
}

// runningWith lists the processes (of this PID namespace) whose argument
// list holds arg.
func runningWith(arg string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), arg) {
			out = append(out, e.Name())
		}
	}
	return out
}

// killAll ends the processes runningWith(arg) lists.
func killAll(arg string) {
	for _, p := range runningWith(arg) {
		n, _ := strconv.Atoi(p)
		syscall.Kill(n, syscall.SIGKILL)
	}
}

// needContain stops the test, naming why, where a run's command cannot be
// contained here (airlock doctor's contain check). Under CI=true that
// fails the test.
func (x *h) needContain() {
	x.t.Helper()
	if r := x.airlock("doctor"); !doctorSupports(r.Stdout, "contain") {
		testbin.Missing(x.t, "run's command cannot be contained here (no PID namespace):\n%s", r.Stdout)
	}
}

// leftoverCases are processes a command leaves behind, each reaching its
// tree its own way once $OUT/go exists (never before: the test decides
// when, so nothing here races the clock): through its working directory,
// the base's path inside its mount namespace, the old tree's path, with
// the environment airlock gives the command and without it, in a session
// of its own, or holding nothing but an inotify watch and writing where a
// check has just looked. $TAG names the leftover in its argument list;
// each says it is running by creating $OUT/started.
var leftoverCases = []struct {
	name, script string
	noSamePath   bool
	samePath     bool // needs same-path mode
}{
	{name: "working directory in the tree",
		script: `sh -c 'touch "$OUT/started"; while [ ! -e "$OUT/go" ]; do sleep 0.01; done; echo leak > leak.txt' "$TAG" >/dev/null 2>&1 &`},
	{name: "base path in its mount namespace", samePath: true,
		script: `cd /; sh -c 'touch "$OUT/started"; while [ ! -e "$OUT/go" ]; do sleep 0.01; done; echo leak > "$BASE/leak.txt"' "$TAG" >/dev/null 2>&1 &`},
	{name: "old tree path", noSamePath: true,
		script: `old=$PWD; cd /; sh -c 'touch "$OUT/started"; while [ ! -e "$OUT/go" ]; do sleep 0.01; done; echo leak > "$1/leak.txt"' "$TAG" "$old" >/dev/null 2>&1 &`},
	{name: "environment dropped, own session",
		script: `setsid env -i OUT="$OUT" /bin/sh -c 'touch "$OUT/started"; while [ ! -e "$OUT/go" ]; do sleep 0.01; done; echo leak > leak.txt' "$TAG" >/dev/null 2>&1 &`},
	{name: "base path in its mount namespace, environment dropped", samePath: true,
		script: `cd /; setsid env -i BASE="$BASE" OUT="$OUT" /bin/sh -c 'touch "$OUT/started"; while [ ! -e "$OUT/go" ]; do sleep 0.01; done; echo leak > "$BASE/leak.txt"' "$TAG" >/dev/null 2>&1 &`},
	{name: "only an inotify watch, environment dropped",
		script: `setsid env -i "$@" "$TAG" >/dev/null 2>&1 & while [ ! -e "$OUT/armed" ]; do sleep 0.01; done; touch "$OUT/started"`},
}

// leftoverRun starts, in a run, leftover case c's process and returns once
// it is running and the run has settled.
func (x *h) leftoverRun(args []string, c int, out, tag string) result {
	x.t.Helper()
	script := leftoverCases[c].script + `
while [ ! -e "$OUT/started" ]; do sleep 0.01; done`
	argv := append([]string{"sh", "-c", script, "sh"}, partCommand("inotify-writer", ".", x.state, filepath.Join(out, "armed"), filepath.Join(out, "go"))...)
	return x.exec(run{env: []string{"BASE=" + x.base, "OUT=" + out, "TAG=" + tag}, args: append(args, append([]string{"--"}, argv...)...)})
}

// TestE2ERecycleNeverLeaksALeftoverProcess: a process the previous command
// left running (a dev server) must never write into the next transaction,
// however it detached and however it reaches its old tree. The command runs
// contained: the settle ends what it left (and names it in left_running),
// so the tree is pooled with no writer left, and the next run recycles it
// safely.
func TestE2ERecycleNeverLeaksALeftoverProcess(t *testing.T) {
	samePath := exec.Command("unshare", "--mount", "true").Run() == nil
	for i, c := range leftoverCases {
		t.Run(c.name, func(t *testing.T) {
			if c.samePath && !samePath {
				testbin.Missing(t, "same-path mode needs a mount namespace, and `unshare --mount true` failed here")
			}
			x := newH(t)
			x.needContain()
			out := testbin.RealDir(t)
			tag := fmt.Sprintf("airlock-leftover-%d-%d-%d", i, os.Getpid(), time.Now().UnixNano())
			t.Cleanup(func() { killAll(tag) })
			build(t, x.base, tree{"f": F(0o644, "f\n")})
			backdate(t, x.base, time.Hour)
			args := []string{"run", "--workdir", x.base}
			if c.noSamePath {
				args = append(args, "--no-same-path")
			}
			r1 := x.leftoverRun(args, i, out, tag)
			wantBlock(t, r1, map[string]string{"outcome": "no_changes"})
			if left := runningWith(tag); len(left) > 0 {
				t.Fatalf("processes %v the command left are still running after its run settled", left)
			}
			if first := x.airlock("show", r1.Settle["tx"], "--json"); !strings.Contains(first.Stdout, "left_running") {
				t.Errorf("the settle did not record the process the command left running:\n%s", first.Stdout)
			}
			// Were it still running, the leftover would write now.
			if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r2 := x.airlock(append(args, "--", "sh", "-c", "test ! -e leak.txt")...)
			wantBlock(t, r2, map[string]string{"outcome": "no_changes"})
			if testbin.Exists(filepath.Join(x.base, "leak.txt")) {
				t.Fatalf("the leftover process's write reached the base")
			}
			if s := x.showRecycle(r2.Settle["tx"]); s.Recycled == nil || s.Recycled.From != r1.Settle["tx"] {
				t.Errorf("the next run did not recycle the tree its contained predecessor settled: recycled %+v, not_recycled %q", s.Recycled, s.NotRecycled)
			}
		})
	}
}

// TestE2ERecycleUncontainedNeverPools: where no PID namespace can be had
// (AIRLOCK_TEST_OFF=contain stands in for such a machine), the command
// runs uncontained and a leftover keeps running, however it hides (an
// inotify watch alone, its environment dropped, in a session of its own:
// nothing /proc shows would name it); its tree is never pooled, and the
// next runs copy afresh with nothing written into them.
func TestE2ERecycleUncontainedNeverPools(t *testing.T) {
	samePath := exec.Command("unshare", "--mount", "true").Run() == nil
	for i, c := range leftoverCases {
		t.Run(c.name, func(t *testing.T) {
			if c.samePath && !samePath {
				testbin.Missing(t, "same-path mode needs a mount namespace, and `unshare --mount true` failed here")
			}
			x := newH(t)
			x.env = append(x.env, "AIRLOCK_TEST_OFF=contain")
			out := testbin.RealDir(t)
			tag := fmt.Sprintf("airlock-leftover-%d-%d-%d", i, os.Getpid(), time.Now().UnixNano())
			t.Cleanup(func() { killAll(tag) })
			build(t, x.base, tree{"f": F(0o644, "f\n")})
			backdate(t, x.base, time.Hour)
			args := []string{"run", "--workdir", x.base}
			// Without a namespace of any kind where same-path mode is not
			// the point, as on a machine that has none: the leftover then
			// holds no mount of the tree either.
			if !c.samePath {
				args = append(args, "--no-same-path")
			}
			r1 := x.leftoverRun(args, i, out, tag)
			wantBlock(t, r1, map[string]string{"outcome": "no_changes"})
			if len(runningWith(tag)) == 0 {
				t.Fatal("the leftover is gone: uncontained, nothing should have ended it")
			}
			r2 := x.airlock(append(args, "--", "true")...)
			wantBlock(t, r2, map[string]string{"outcome": "no_changes"})
			if s := x.showRecycle(r2.Settle["tx"]); s.Recycled != nil {
				t.Errorf("the next open recycled the tree a leftover process could write: %+v", s.Recycled)
			}
			if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r3 := x.airlock(append(args, "--", "sh", "-c", "test ! -e leak.txt")...)
			wantBlock(t, r3, map[string]string{"outcome": "no_changes"})
			if testbin.Exists(filepath.Join(x.base, "leak.txt")) {
				t.Fatalf("the leftover process's write reached the base")
			}
		})
	}
}

// TestE2EGCTrimsThePool: gc reports what the pool holds, keeps it by
// default, removes it with --drop-pool (a dry run removes nothing), and
// the next run then copies afresh.
func TestE2EGCTrimsThePool(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	backdate(t, x.base, time.Hour)
	r1 := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(t, r1, map[string]string{"outcome": "no_changes"})
	id := r1.Settle["tx"]
	dry := x.airlock("gc", "--dry-run", "--drop-pool")
	wantCode(t, dry, 0)
	if !strings.Contains(dry.Stdout, "would remove the pooled tree of "+id) {
		t.Errorf("gc --dry-run --drop-pool does not report the pooled tree of %s:\n%s", id, dry.Stdout)
	}
	keep := x.airlock("gc")
	wantCode(t, keep, 0)
	if !strings.Contains(keep.Stdout, "kept 1 pooled staged tree") {
		t.Errorf("gc does not say it kept the pooled tree:\n%s", keep.Stdout)
	}
	drop := x.airlock("gc", "--drop-pool")
	wantCode(t, drop, 0)
	if !strings.Contains(drop.Stdout, "removed the pooled tree of "+id) {
		t.Errorf("gc --drop-pool does not report removing the pooled tree:\n%s", drop.Stdout)
	}
	r2 := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(t, r2, map[string]string{"outcome": "no_changes"})
	if s := x.showRecycle(r2.Settle["tx"]); s.Recycled != nil {
		t.Errorf("a run after gc --drop-pool recycled %+v", s.Recycled)
	}
}

// TestE2ERecycleNeverFollowsASwappedStagedDir: a command that puts a
// symlink (to any directory its user can write, or to the base itself) or
// another directory at its staged workspace's path must not make the next
// open "refresh" that directory: nothing outside the state directory is
// written or deleted, and the base is left as it was.
func TestE2ERecycleNeverFollowsASwappedStagedDir(t *testing.T) {
	for _, c := range []struct{ name, target string }{
		{"symlink to another directory", "victim"},
		{"symlink to the base", "base"},
		{"another directory", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"keep/src.c": F(0o644, "int main;\n"), "README": F(0o644, "base\n")})
			backdate(t, x.base, time.Hour)
			victim := testbin.RealDir(t)
			build(t, victim, tree{"thesis/chapter1.tex": F(0o644, "years of work\n"), "id_ed25519": F(0o600, "key\n")})
			target := map[string]string{"victim": victim, "base": x.base}[c.target]
			swap := `s=$AIRLOCK_STATE_DIR/tx/$AIRLOCK_TX; mv "$s/staged" "$s/staged.old" && `
			if target != "" {
				swap += `ln -s "$TARGET" "$s/staged"`
			} else {
				swap += `cp -a "$s/staged.old" "$s/staged"`
			}
			// Where the command's namespace shows the state root read-only
			// the swap itself fails; the staged path is then still the tree
			// staging made, which may be recycled.
			marks := testbin.RealDir(t)
			swap += ` && touch "$MARKS/swapped"`
			r1 := x.exec(run{env: []string{"TARGET=" + target, "MARKS=" + marks}, args: []string{"run", "--no-same-path", "--workdir", x.base, "--", "sh", "-c", swap + "; exit 1"}})
			wantCode(t, r1, 1)
			swapped := testbin.Exists(filepath.Join(marks, "swapped"))
			r2 := x.airlock("open", "--workdir", x.base)
			wantCode(t, r2, 0)
			id := strings.TrimSpace(strings.SplitN(r2.Stdout, "\n", 2)[0])
			if s := x.showRecycle(id); swapped && s.Recycled != nil {
				t.Errorf("the next open recycled what the command put at its staged path: %+v", s.Recycled)
			}
			if got := testbin.ReadFile(t, filepath.Join(victim, "thesis/chapter1.tex")); got != "years of work\n" {
				t.Errorf("a directory outside the state was written: chapter1.tex = %q", got)
			}
			if !testbin.Exists(filepath.Join(victim, "id_ed25519")) {
				t.Errorf("a directory outside the state lost a file")
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "keep/src.c")); got != "int main;\n" {
				t.Errorf("the base was written: keep/src.c = %q", got)
			}
		})
	}
}

// waitForFile waits until path exists, for as long as p runs: a readiness
// handshake with the command p runs, never a guess at how long it takes.
func waitForFile(t *testing.T, path string, p *testbin.Proc) {
	t.Helper()
	for !testbin.Exists(path) {
		select {
		case <-p.Done():
			if testbin.Exists(path) {
				return
			}
			t.Fatalf("the command ended before it created %s:\n%s", path, p.Wait())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestE2ERecycleAsAnotherUser: a user who is not root recycles as root
// does, on a machine where other users' processes start and stop while its
// transactions run. Its command runs contained (in a user and PID
// namespace), so airlock knows its processes without inspecting anyone
// else's.
func TestE2ERecycleAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to start another user's process while airlock runs as this one: run as root (CI does)")
	}
	w := newRootlessWorld(t, map[string]string{"f": "f\n", "sub/g": "g\n"})
	if r := w.airlock("doctor"); !doctorSupports(r.Stdout, "contain") {
		testbin.Missing(t, "a user who is not root cannot contain run's command here (no user and PID namespace):\n%s", r.Stdout)
	}
	tag := fmt.Sprintf("airlock-other-user-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { killAll(tag) })
	// While the first run's command runs, a process of another user
	// (root's) starts and keeps running.
	p := w.start("", "run", "--", "sh", "-c", `touch "$OUT/ready"; while [ ! -e "$OUT/other" ]; do sleep 0.01; done; echo one > one`)
	waitForFile(t, filepath.Join(w.out, "ready"), p)
	other := exec.Command("sh", "-c", `exec sleep 1000 "$0"`, tag)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	go other.Wait()
	if err := os.WriteFile(filepath.Join(w.out, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r1 := p.WaitSettled()
	wantBlock(t, r1, map[string]string{"outcome": "committed", "added": "1"})
	// And one that starts and stops meanwhile.
	if err := exec.Command("true").Run(); err != nil {
		t.Fatal(err)
	}
	r2 := w.airlock("run", "--", "sh", "-c", `[ "$(cat one)" = one ]`)
	wantBlock(t, r2, map[string]string{"outcome": "no_changes"})
	show := w.airlock("show", r2.Settle["tx"], "--json")
	var s recycleShow
	if err := json.Unmarshal([]byte(show.Stdout), &s); err != nil {
		t.Fatalf("show --json: %v\n%s", err, show)
	}
	if s.Recycled == nil || s.Recycled.From != r1.Settle["tx"] {
		t.Errorf("the second run as another user did not recycle the first's tree: recycled %+v, not_recycled %q", s.Recycled, s.NotRecycled)
	}
}

// TestE2ERecycleNeverLeaksThroughAConcurrentRun: a command of another
// transaction that runs across a tree's settle may hold that tree (here a
// directory descriptor the settling run's command handed it over an
// abstract unix socket, naming no path), so the tree is not reused while
// it runs: the next run copies afresh and commits nothing, however the
// holder times its write. Once it has ended, the machine is quiet, and the
// next run recycles again.
func TestE2ERecycleNeverLeaksThroughAConcurrentRun(t *testing.T) {
	x := newH(t)
	x.needContain()
	out := testbin.RealDir(t)
	tag := fmt.Sprintf("airlock-fd-holder-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { killAll(tag) })
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	backdate(t, x.base, time.Hour)
	ready, goFile, stop := filepath.Join(out, "ready"), filepath.Join(out, "go"), filepath.Join(out, "stop")
	holder := x.start(run{args: append([]string{"run", "--workdir", x.base, "--"}, partCommand("fd-holder", tag, ready, goFile, stop, tag)...)})
	waitForFile(t, ready, holder)
	// Another transaction's command hands it its workspace and settles,
	// having changed nothing: its tree is pooled.
	giver := x.airlock(append([]string{"run", "--workdir", x.base, "--"}, partCommand("fd-giver", tag)...)...)
	wantBlock(t, giver, map[string]string{"outcome": "no_changes"})
	if dry := x.airlock("gc", "--dry-run", "--drop-pool"); !strings.Contains(dry.Stdout, "pooled tree of "+giver.Settle["tx"]) {
		t.Fatalf("the giver's tree was not pooled, so this test proves nothing:\n%s", dry.Stdout)
	}
	// From now on the holder writes the moment a walk has read that tree.
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	next := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(t, next, map[string]string{"outcome": "no_changes"})
	if s := x.showRecycle(next.Settle["tx"]); s.Recycled != nil {
		t.Errorf("a run recycled the tree a running command of another transaction holds: %+v", s.Recycled)
	}
	if testbin.Exists(filepath.Join(x.base, "leak.txt")) {
		t.Fatal("the holder's write reached the base")
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantBlock(t, holder.WaitSettled(), map[string]string{"outcome": "no_changes"})
	// Nothing runs now: the next run recycles, and nothing is written.
	last := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "test ! -e leak.txt")
	wantBlock(t, last, map[string]string{"outcome": "no_changes"})
	if s := x.showRecycle(last.Settle["tx"]); s.Recycled == nil {
		t.Errorf("with nothing running, the next run did not recycle: not_recycled %q", s.NotRecycled)
	}
}

// TestE2ERecycleOffAfterAnUncontainedRun: one run that falls back to
// running uncontained (AIRLOCK_TEST_OFF=contain for it alone) may leave
// processes no one bounds, which a later contained command could hand any
// tree: under that state directory no tree is reused again in this boot,
// and doctor's recycle check says why.
func TestE2ERecycleOffAfterAnUncontainedRun(t *testing.T) {
	x := newH(t)
	x.needContain()
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	backdate(t, x.base, time.Hour)
	off := x.exec(run{env: []string{"AIRLOCK_TEST_OFF=contain"}, args: []string{"run", "--workdir", x.base, "--", "true"}})
	wantBlock(t, off, map[string]string{"outcome": "no_changes"})
	for i := range 2 {
		r := x.airlock("run", "--workdir", x.base, "--", "true")
		wantBlock(t, r, map[string]string{"outcome": "no_changes"})
		if s := x.showRecycle(r.Settle["tx"]); s.Recycled != nil {
			t.Errorf("contained run %d after an uncontained one recycled %+v", i+1, s.Recycled)
		}
	}
	if d := x.airlock("doctor"); !strings.Contains(d.Stdout, "ran uncontained in this boot") {
		t.Errorf("doctor does not say why nothing is recycled:\n%s", d.Stdout)
	}
}
