//go:build linux

package main_test

import (
	"bytes"
	"github.com/airlockdev/airlock/internal/testbin"
	"golang.org/x/sys/unix"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Attacks on the state root's watch daemon (internal/watchd): ways the
// base changes that no event the daemon counts names, so that a warm
// run's tree keeps bytes the base no longer has, where the walk the
// daemon replaced would have seen the file's new stat.
//
// Any change of the mount table on the machine (another process's mount)
// makes the daemon answer "unknown" and the run walk, which hides the
// break; each scenario is tried again from scratch, a few times, until
// its last run is one whose base was measured by the daemon's word.

// chain is one try of a scenario: its warm runs, each of which must have
// measured the base by the daemon's word for the try to count (a walk
// of the base in between rebuilds the daemon's view of it).
type chain struct {
	x      *h
	walked bool
}

// warmRun runs listing in a warm run and returns what the run saw, what
// the base holds, and how the refresh measured (recycled.watched, "" once
// any run of the chain walked the base).
func (c *chain) warmRun() (got, want, watched string) {
	x := c.x
	x.t.Helper()
	want = x.baseListing()
	r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", listing)
	wantBlock(x.t, r, map[string]string{"outcome": "no_changes"})
	s := x.watchdShow(r.Settle["tx"])
	if s.Recycled != nil {
		watched = s.Recycled.Watched
	}
	if !strings.Contains(watched, "base") {
		c.walked = true
	}
	if c.walked {
		watched = ""
	}
	return r.Stdout, want, watched
}

// attackWatchd runs scenario (which makes its own h) and fails if its
// final warm run's tree is not the base. Walking instead of trusting the
// daemon is a right answer; keeping old bytes never is.
func attackWatchd(t *testing.T, scenario func(t *testing.T) (got, want, watched string)) {
	got, want, watched := scenario(t)
	if got != want {
		t.Fatalf("the warm run's tree is not the base (watched %q):\n--- run\n%s--- base\n%s", watched, got, want)
	}
}

// mapShared opens path for reading and writing and maps it shared.
func mapShared(t *testing.T, path string, n int) []byte {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	mem, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	return mem
}

// TestWatchdAttackLinkMadeInsideBase: a second name made INSIDE the base
// (ln a b) after the daemon began: the kernel tells the base's directory
// watch that b was created, never that a's link count moved, so only b is
// noted as linked and named at every refresh. A write through b then
// changes a with no event naming a, and the next warm run's a keeps the
// old bytes.
func TestWatchdAttackLinkMadeInsideBase(t *testing.T) {
	attackWatchd(t, func(t *testing.T) (string, string, string) {
		x := watchdStart(t, tree{"a": F(0o644, "a\n"), "x": F(0o644, "x\n")})
		c := &chain{x: x}
		c.warmRun()
		if err := os.Link(filepath.Join(x.base, "a"), filepath.Join(x.base, "b")); err != nil {
			t.Fatal(err)
		}
		c.warmRun()
		writeFile(t, filepath.Join(x.base, "b"), "written through the second name\n")
		return c.warmRun()
	})
}

// TestWatchdAttackWriterRenamedWhileOpen: the daemon counts opens less
// closes by path. A file open for writing (a shared mapping, as a
// database keeps) that is renamed inside the base takes its count to its
// new name, and a write through the mapping after later tokens is still
// seen.
func TestWatchdAttackWriterRenamedWhileOpen(t *testing.T) {
	attackWatchd(t, func(t *testing.T) (string, string, string) {
		x := watchdStart(t, tree{"m": F(0o644, "0123456789\n"), "x": F(0o644, "x\n")})
		c := &chain{x: x}
		mem := mapShared(t, filepath.Join(x.base, "m"), 11)
		if err := os.Rename(filepath.Join(x.base, "m"), filepath.Join(x.base, "n")); err != nil {
			t.Fatal(err)
		}
		c.warmRun()
		waitPastClock(t, x.state, x.base, "n") // the rename out of every timestamp window
		c.warmRun()
		copy(mem, "ABC")
		return c.warmRun()
	})
}

// TestWatchdAttackWriterForgottenWhenWatchRebuilt: a base watch the
// daemon builds anew (after a mount, an overflow) keeps what the old one
// counted of files open: a mapping opened while the daemon watched, and
// written after the next token, is still seen.
func TestWatchdAttackWriterForgottenWhenWatchRebuilt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	attackWatchd(t, func(t *testing.T) (string, string, string) {
		x := watchdStart(t, tree{"m": F(0o644, "0123456789\n"), "x": F(0o644, "x\n")})
		c := &chain{x: x}
		mem := mapShared(t, filepath.Join(x.base, "m"), 11)
		c.warmRun()
		// An unrelated mount, outside the base: the base watch is rebuilt
		// by the next token, its counts empty.
		mnt := t.TempDir()
		if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Fatal(err)
		}
		c.warmRun() // walks the base, as it must: its token is the new watch's
		c.walked = false
		copy(mem, "ABC")
		return c.warmRun()
	})
}

// TestWatchdAttackBindMountInsideBase: a directory of the base bind-mounted
// at a second path of the base (before the daemon began: no change of the
// mount table is seen). inotify gives one watch descriptor per inode, so
// the daemon's map names the directory by whichever path it listed last;
// a write through the other path is reported under the wrong name, and
// the path it was made through keeps its old bytes in the next run.
func TestWatchdAttackBindMountInsideBase(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a bind mount needs root")
	}
	attackWatchd(t, func(t *testing.T) (string, string, string) {
		x := newH(t)
		x.needWatchd()
		c := &chain{x: x}
		build(t, x.base, tree{"a/f": F(0o644, "f\n"), "b/.keep": F(0o644, ""), "x": F(0o644, "x\n")})
		os.Remove(filepath.Join(x.base, "b/.keep"))
		if out, err := exec.Command("mount", "--bind", filepath.Join(x.base, "a"), filepath.Join(x.base, "b")).CombinedOutput(); err != nil {
			t.Fatalf("mount --bind: %v\n%s", err, out)
		}
		t.Cleanup(func() { syscall.Unmount(filepath.Join(x.base, "b"), syscall.MNT_DETACH) })
		backdate(t, x.base, time.Hour)
		wantBlock(t, x.airlock("run", "--workdir", x.base, "--", "true"), map[string]string{"outcome": "no_changes"})
		c.warmRun()
		writeFile(t, filepath.Join(x.base, "a/f"), "changed through a\n")
		got, want, watched := c.warmRun()
		if got == want {
			// The map may name the directory a: then b is the stale path.
			writeFile(t, filepath.Join(x.base, "b/f"), "changed through b\n")
			got, want, watched = c.warmRun()
		}
		return got, want, watched
	})
}

// TestWatchdAttackNonUTF8NameInBase: the daemon's answers are JSON, which
// replaces every byte of a path that is not UTF-8 with U+FFFD. A base
// file (or directory) whose name is not UTF-8 is named by another path,
// one that does not exist: a write to it is measured nowhere, and the next
// warm run keeps the old bytes.
func TestWatchdAttackNonUTF8NameInBase(t *testing.T) {
	attackWatchd(t, func(t *testing.T) (string, string, string) {
		x := watchdStart(t, tree{"caf\xe9": F(0o644, "f\n"), "d\xe9/g": F(0o644, "g\n"), "x": F(0o644, "x\n")})
		c := &chain{x: x}
		c.warmRun()
		writeFile(t, filepath.Join(x.base, "caf\xe9"), "changed\n")
		writeFile(t, filepath.Join(x.base, "d\xe9/g"), "changed\n")
		return c.warmRun()
	})
}

// TestWatchdAttackNonUTF8NamePlantedInPool: the same mangling on the held
// tree's side. A file whose name is not UTF-8, written into a pooled tree
// after its run settled, is named to the refresh by a path that does not
// exist: the patched measurement of the tree never sees it, the tree is
// reused with the file in it, and a next command that merely reads it
// makes it an addition of its own, committed into the base.
func TestWatchdAttackNonUTF8NamePlantedInPool(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	build(t, x.base, tree{"f": F(0o644, "f\n"), "x": F(0o644, "x\n")})
	backdate(t, x.base, time.Hour)
	var r result
	for i := 0; i < 3; i++ { // the last one's watch is handed to the daemon
		r = x.airlock("run", "--workdir", x.base, "--", "true")
		wantBlock(t, r, map[string]string{"outcome": "no_changes"})
	}
	writeFile(t, filepath.Join(x.pooledTree(r.Settle["tx"]), "planted\xff"), "planted into the pool\n")
	r = x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "cat ./planted* >/dev/null 2>&1; true")
	s := x.watchdShow(r.Settle["tx"])
	if _, err := os.Lstat(filepath.Join(x.base, "planted\xff")); err == nil {
		t.Fatalf("the file planted into the pooled tree was committed into the base (outcome %s, added %s, recycled %+v)",
			r.Settle["outcome"], r.Settle["added"], s.Recycled)
	}
	wantBlock(t, r, map[string]string{"outcome": "no_changes"})
	if s.Recycled != nil {
		t.Errorf("the tree written after its run settled was reused: %+v", s.Recycled)
	}
}

// TestWatchdAttackDaemonInAnotherMountNamespace: the daemon is started by
// whichever airlock first needs it, and lives in that airlock's mount
// namespace; every later client of the state root asks it, from wherever
// it runs. A run first from a private mount namespace (a sandboxed
// terminal, a container sharing the state root) where a tmpfs covers part
// of the base leaves a daemon that sees the base otherwise: it answers a
// client of another namespace "unknown", and that run walks.
func TestWatchdAttackDaemonInAnotherMountNamespace(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		testbin.Missing(t, "unshare (util-linux) is not installed")
	}
	ns := []string{"-m", "--propagation", "private"}
	if os.Geteuid() != 0 {
		ns = []string{"-Urm", "--propagation", "private"}
	}
	attackWatchd(t, func(t *testing.T) (string, string, string) {
		x := newH(t)
		x.needWatchd()
		build(t, x.base, tree{"sub/r": F(0o644, "the base's own\n"), "x": F(0o644, "x\n")})
		backdate(t, x.base, time.Hour)
		sub := filepath.Join(x.base, "sub")
		script := `mount -t tmpfs none "$SUB" && echo "another namespace's" > "$SUB/t" &&
"$AL" run --workdir "$B" -- true && "$AL" run --workdir "$B" -- true && "$AL" run --workdir "$B" -- true`
		cmd := exec.Command("unshare", append(ns, "sh", "-c", script)...)
		cmd.Dir = x.base
		cmd.Env = x.environ("AL="+airlockBin, "B="+x.base, "SUB="+sub)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("runs in a private mount namespace: %v\n%s", err, out)
		}
		return (&chain{x: x}).warmRun()
	})
}

// TestWatchdAttackDirectoriesExchanged: renameat2(RENAME_EXCHANGE) of two
// directories of the base (mv --exchange, util-linux exch) queues
// MOVED_FROM d1, MOVED_TO d2, MOVED_FROM d2, MOVED_TO d1, which no map of
// watches by path follows: a directory moved makes the base's watch start
// over.
func TestWatchdAttackDirectoriesExchanged(t *testing.T) {
	attackWatchd(t, func(t *testing.T) (string, string, string) {
		x := watchdStart(t, tree{"d1/f": F(0o644, "one\n"), "d2/f": F(0o644, "two\n"), "x": F(0o644, "x\n")})
		if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(x.base, "d1"), unix.AT_FDCWD, filepath.Join(x.base, "d2"), unix.RENAME_EXCHANGE); err != nil {
			t.Skipf("renameat2(RENAME_EXCHANGE): %v", err)
		}
		c := &chain{x: x}
		c.warmRun()
		waitPastClock(t, x.state, x.base, "d1/f", "d2/f")
		c.warmRun()
		writeFile(t, filepath.Join(x.base, "d2/f"), "written after the exchange\n")
		return c.warmRun()
	})
}

// TestWatchdAttackNonUTF8DirPlantedInPoolOverwritesBase: a file planted
// into a pooled tree under a directory whose name is not UTF-8 (the
// watch's directories once travelled to the daemon as JSON, which
// mangled the name) is seen, and a command that only reads it commits
// nothing over the base's own.
func TestWatchdAttackNonUTF8DirPlantedInPoolOverwritesBase(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	build(t, x.base, tree{"d\xe9/g": F(0o644, "the base's own\n"), "x": F(0o644, "x\n")})
	backdate(t, x.base, time.Hour)
	var r result
	for i := 0; i < 3; i++ { // the last one's watch is handed to the daemon
		r = x.airlock("run", "--workdir", x.base, "--", "true")
		wantBlock(t, r, map[string]string{"outcome": "no_changes"})
	}
	writeFile(t, filepath.Join(x.pooledTree(r.Settle["tx"]), "d\xe9/g"), "planted into the pool\n")
	r = x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "cat ./d*/g >/dev/null")
	s := x.watchdShow(r.Settle["tx"])
	if got, _ := os.ReadFile(filepath.Join(x.base, "d\xe9/g")); string(got) != "the base's own\n" {
		t.Fatalf("a command that only read d\\xe9/g committed what was planted into the pooled tree over the base's own: %q (outcome %s, modified %s, recycled %+v)",
			got, r.Settle["outcome"], r.Settle["modified"], s.Recycled)
	}
	wantBlock(t, r, map[string]string{"outcome": "no_changes"})
}

// TestWatchdAttack2StoppedDaemonHoldsEveryRun: a daemon that accepts
// connections and never answers (stopped: a debugger, a frozen cgroup, a
// process stuck in the kernel) is waited for a few seconds at most, then
// ended, and the next run starts another: no run waits for it for long,
// and runs go on being watched. A run here is held to half the harness's
// timeout (15 seconds), many times what the walk it falls back to takes.
func TestWatchdAttack2StoppedDaemonHoldsEveryRun(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	build(t, x.base, tree{"f": F(0o644, "f\n"), "x": F(0o644, "x\n")})
	backdate(t, x.base, time.Hour)
	for i := 0; i < 3; i++ { // the last one's tree is pooled with a held watch and a token
		wantBlock(t, x.airlock("run", "--workdir", x.base, "--", "true"), map[string]string{"outcome": "no_changes"})
	}
	stopWatchd(t, watchdPid(t, x.state))
	for i := 0; i < 2; i++ {
		start := time.Now()
		r := x.exec(run{args: []string{"run", "--workdir", x.base, "--", "true"}, timeout: 3 * time.Minute})
		took := time.Since(start)
		wantBlock(t, r, map[string]string{"outcome": "no_changes"})
		if took > commandTimeout/2 {
			t.Fatalf("run %d with the daemon stopped took %s (at most %s)", i+1, took.Round(time.Second), commandTimeout/2)
		}
	}
}

// stopWatchd stops the process pid (SIGSTOP) and returns once every
// thread of it is stopped; the test's cleanup lets it go on.
func stopWatchd(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
		stopped := len(tasks) > 0
		for _, p := range tasks {
			b, err := os.ReadFile(p)
			if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) && b[i+2] != 'T' {
				stopped = false
			}
		}
		if stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon %d does not stop", pid)
		}
		runtime.Gosched()
	}
}

// watchdPid is the pid of the daemon of the state root state: the
// process started as airlock-watchd with AIRLOCK_WATCHD naming its
// directory.
func watchdPid(t *testing.T, state string) int {
	t.Helper()
	want := []byte("AIRLOCK_WATCHD=" + filepath.Join(state, "watchd") + "\x00")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(cmdline) != "airlock-watchd\x00" {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(env, want) {
			return pid
		}
	}
	t.Fatalf("no daemon of %s runs", state)
	return 0
}
