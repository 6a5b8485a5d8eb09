//go:build linux

package main_test

// Outside review of c0bfad5 (a pooled tree whose open staged it exactly,
// untouched since, is taken with nothing measured also where the daemon
// names base paths, when each measures now as the pooled open measured
// it with a ctime the clock proves older than that measurement:
// pool.baseUnchanged) and of 2a926f1 (a request or reply larger than one
// write to the daemon's socket goes on in writes of its own: watchd.send).
// Each test states the guarantee it holds the shortcut to: a warm run's
// tree is what a fresh copy of the base would be now. Those that fail show
// where it breaks, and say whether the break is older than the shortcut.

import (
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAttack6DirtyMappedPageRewritten: a base file mapped shared and
// written through the mapping (a database's file) moves its mtime and
// ctime only at the write fault that dirties a page; further writes to
// that page, still dirty and writable, move nothing until the kernel
// writes it back (dirty_expire_centisecs: 30 s by default). Written
// once before a pooled open measured it, and again after, the file shows
// every stat fact that open measured, ctime included, long proved by the
// clock, while its bytes are new: the daemon names it (it is open), the
// exact path measures it unchanged and takes the pooled tree with the old
// bytes. Not new with c0bfad5: the refresh it replaced keeps the entry
// for the same stat (stage.Refresh), and a walked warm run (the control)
// does the same. Only a fresh copy reads the bytes.
func TestAttack6DirtyMappedPageRewritten(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			// The attack needs the page to stay dirty between the two
			// writes: a writeback between them (the flusher, anyone's
			// sync) write-protects it, the second write faults and moves
			// the times, and there is nothing to show. Such a try is
			// inconclusive and made again from scratch.
			for try := 0; try < 3; try++ {
				got, want, ok := dirtyPageRewrite(t, walk)
				if !ok {
					t.Logf("try %d: the page was written back between the two writes", try+1)
					continue
				}
				if got != want {
					t.Fatalf("a second write to a dirty mapped page of a base file: the warm run's tree keeps the first write's bytes:\n--- run\n%s--- base\n%s", got, want)
				}
				return
			}
			t.Skip("the mapped page was written back between the two writes in every try: the attack did not happen")
		})
	}
}

// dirtyPageRewrite is one try of TestAttack6DirtyMappedPageRewritten: the
// listing the last warm run saw and the base's, and whether the second
// write left the file's stat as it was (the attack happened).
func dirtyPageRewrite(t *testing.T, walk bool) (got, want string, ok bool) {
	t.Helper()
	x := newH(t)
	if walk {
		x.needContain()
		x.env = []string{"AIRLOCK_NO_WATCH=1"}
	} else {
		x.needWatchd()
	}
	build(t, x.base, tree{"m": F(0o644, "0123456789\n"), "x": F(0o644, "x\n")})
	backdate(t, x.base, time.Hour)
	wantBlock(t, x.airlock("run", "--workdir", x.base, "--", "true"), map[string]string{"outcome": "no_changes"})
	m := filepath.Join(x.base, "m")
	mem := mapShared(t, m, 11)
	copy(mem, "AAA") // the write fault: m's mtime and ctime move
	waitPastClock(t, x.state, x.base, "m")
	x.runSeesBase("after the first write through the mapping")
	// This run's open measured m as it is now, and its tree is pooled
	// exactly as staged: the next warm run's candidate for the exact path.
	x.runSeesBase("the run whose tree is pooled exact")
	var before, after unix.Stat_t
	if err := unix.Stat(m, &before); err != nil {
		t.Fatal(err)
	}
	copy(mem, "BBB") // the same page, dirty and writable: no fault
	if err := unix.Stat(m, &after); err != nil {
		t.Fatal(err)
	}
	if before.Mtim != after.Mtim || before.Ctim != after.Ctim {
		return "", "", false
	}
	want = x.baseListing()
	r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", listing)
	wantBlock(t, r, map[string]string{"outcome": "no_changes"})
	if s := x.watchdShow(r.Settle["tx"]); s.Recycled == nil {
		t.Fatalf("the last run did not recycle (%s): the attack needs it", s.NotRecycled)
	} else {
		t.Logf("the last run recycled, measured %q", s.Recycled.Watched)
	}
	return r.Stdout, want, true
}
