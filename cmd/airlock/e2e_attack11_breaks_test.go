//go:build airlock_known_breaks && linux

package main_test

import (
	"os"
	"path/filepath"
	"testing"
)

// Guarantees of checkpoint and rewind that do not hold today (attack11),
// compiled only with the build tag airlock_known_breaks:
// go test -tags 'airlock_faults airlock_known_breaks' -run KnownBreakAttack11 ./cmd/airlock

// TestKnownBreakAttack11RewindAfterTheHumanEditsTheBase: checkpoint 1
// has a.txt untouched; the agent then deletes it (or rewrites it); the
// human edits a.txt in the base, in an editor, as they work beside the
// agent. Rewind 1 is refused for good ("a.txt changed in the base since
// the transaction opened, and its content at open was not kept"): the
// bytes checkpoint 1 held at that path are nowhere. A touch, a chmod or a
// hard link made to the base file (a ctime moved, no byte changed) does
// the same.
//
// Root cause: a checkpoint keeps the bytes of the paths its change set
// names, and a rewind reads every other path's bytes "as the transaction
// opened with them" from the live base, proven by stat facts only (then
// an airlock commit's originals, then a clean git HEAD). Nothing keeps
// a path's bytes at open once the transaction changed it: the staged copy
// was the other copy, and the agent replaced it. A checkpoint recording a
// path changed could keep its side at open too (read from the base while
// its stat facts still prove it), so that any earlier checkpoint stays
// reachable.
func TestKnownBreakAttack11RewindAfterTheHumanEditsTheBase(t *testing.T) {
	for _, agent := range []string{"deletes", "rewrites"} {
		t.Run(agent, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a.txt": F(0o644, "a at open\n")})
			wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
			staged := x.stagedPath("t1")
			writeFile(t, filepath.Join(staged, "b.txt"), "b\n")
			wantCode(t, x.airlock("checkpoint", "t1"), 0)
			at1 := snapshot(t, staged, nil)
			if agent == "deletes" {
				must(t, os.Remove(filepath.Join(staged, "a.txt")))
			} else {
				writeFile(t, filepath.Join(staged, "a.txt"), "the agent's a\n")
			}
			wantCode(t, x.airlock("checkpoint", "t1"), 0)
			writeFile(t, filepath.Join(x.base, "a.txt"), "the human's a\n")
			r := x.airlock("rewind", "t1", "1")
			if r.Code != 0 {
				t.Fatalf("rewind t1 1 after the human edited the base: exit %d\n%s", r.Code, r.Stderr)
			}
			wantTree(t, "staged after rewind 1", at1, snapshot(t, staged, nil))
		})
	}
}
