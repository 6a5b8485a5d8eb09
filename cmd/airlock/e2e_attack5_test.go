//go:build linux

package main_test

// Attack 5 on commit 2520edd: a directory opened names nothing, in a
// run's watch and in a pooled tree's watch the daemon holds. But an
// ioctl on an open directory (FS_IOC_SETFLAGS, as chattr(1) makes it)
// changes the directory's flags and moves its ctime with no fsnotify
// event at all: its open was the only event that named it. The seccomp
// guard refuses file_setattr(2) precisely so that flags are set "through
// an open file (which the watch sees)"; for a directory that open is now
// dropped.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needChattr skips where chattr +d cannot set a directory's flags here.
func needChattr(t *testing.T) {
	t.Helper()
	d := filepath.Join(t.TempDir(), "probe")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+d", d).CombinedOutput(); err != nil {
		t.Skipf("chattr +d on a directory here: %v %s", err, out)
	}
}

// TestAttack5DirFlagsRecord: a watched run's command sets a directory's
// nodump flag with chattr (open the directory, ioctl FS_IOC_SETFLAGS):
// the directory's ctime moves, and nothing but the dropped IN_OPEN saw
// it. The record the run pools keeps d's ctime from the open, so it is
// not the tree, and the next run cannot recycle it. A walk (the control)
// records the tree as it is, and the next run recycles it.
func TestAttack5DirFlagsRecord(t *testing.T) {
	needChattr(t)
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a": F(0o644, "orig\n"), "d/f": F(0o644, "f\n")})
			id1 := x.recycledRun("a", "d/f", "d")
			var env []string
			if walk {
				env = []string{"AIRLOCK_NO_WATCH=1"}
			}
			r2, j2 := x.runJSON(env, "echo two > two.txt && chattr +d d")
			wantCode(t, r2, 0)
			if !walk {
				needWatch(t, j2)
			}
			if j2.Outcome != "committed" {
				t.Fatalf("second run: %+v, want committed\n%s", j2, r2.Stderr)
			}
			if s := x.showRecycle(r2.Settle["tx"]); s.Recycled == nil || s.Recycled.From != id1 {
				t.Logf("the second run did not recycle %s (recycled %+v, not_recycled %q)", id1, s.Recycled, s.NotRecycled)
			}
			// The third run walks (the control's runs all do): its proof
			// compares the pooled record with the tree, entry by entry.
			r3, j3 := x.runJSON([]string{"AIRLOCK_NO_WATCH=1"}, "echo three > three.txt")
			wantCode(t, r3, 0)
			if s := x.showRecycle(r3.Settle["tx"]); s.Recycled == nil || s.Recycled.From != r2.Settle["tx"] {
				t.Errorf("the run after a run that set d's flags did not recycle its tree (measured %q then %q): recycled %+v, not_recycled %q; the pooled record is not the tree",
					j2.Measured, j3.Measured, s.Recycled, s.NotRecycled)
			}
		})
	}
}

// TestAttack5PooledDirFlags: between runs, a process airlock did not
// start sets the nodump flag of a directory of a pooled tree (chattr:
// open it, ioctl). The daemon's held watch sees only the open, which it
// now drops: the next run takes the tree as unwritten (stage.Unchanged)
// with the pooled record's old ctime for sub, so the record it pools in
// turn is not the tree, and the run after cannot recycle it.
func TestAttack5PooledDirFlags(t *testing.T) {
	needChattr(t)
	x := newH(t)
	x.needWatchd()
	id := x.heldPooledTree()
	cmd := exec.Command("chattr", "+d", "sub")
	cmd.Dir = x.pooledTree(id)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chattr +d sub: %v\n%s", err, out)
	}
	// The run after: its tree must be what staging the base afresh
	// makes (sub with no flags), and a pooled tree written after its
	// transaction ended is never reused.
	r2 := x.airlock("run", "--workdir", x.base, "--", "lsattr", "-d", "sub")
	wantBlock(t, r2, map[string]string{"outcome": "no_changes"})
	s2 := x.watchdShow(r2.Settle["tx"])
	if s2.Recycled != nil {
		t.Errorf("the pooled tree whose sub was chattr'd was reused: recycled %+v; the run's lsattr -d sub: %q", s2.Recycled, r2.Stdout)
	} else if !strings.Contains(s2.NotRecycled, "written after") {
		t.Errorf("not_recycled = %q, want it to say the tree was written after its transaction ended", s2.NotRecycled)
	}
	if f := strings.Fields(r2.Stdout); len(f) == 0 || strings.Contains(f[0], "d") {
		t.Errorf("the run's sub has the flags set in the pool: lsattr -d sub = %q", r2.Stdout)
	}
}
