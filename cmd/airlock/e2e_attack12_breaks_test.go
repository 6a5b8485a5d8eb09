//go:build airlock_known_breaks && linux

package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Guarantees of partial commit that do not hold today (attack12),
// compiled only with the build tag airlock_known_breaks:
// go test -tags 'airlock_faults airlock_known_breaks' -run KnownBreakAttack12 ./cmd/airlock

// TestKnownBreakAttack12PartKilledMidApplyStrandsTheWhole: a partial
// commit killed within its apply (after the first operation, or after the
// last before the commit is recorded) is rolled back by recover, exactly:
// a.txt holds its old bytes again and the part k.1 is refused
// InterruptedApply, "commit the transaction again to retry". But the
// transaction k is now refused BaseDrift on a.txt by `commit k` (and by
// `commit k -- a.txt`), and `rebase k` refuses too: the agent's change of
// a.txt and the rest can only land once the agent throws its a.txt away.
// A whole commit killed at the same point commits again cleanly.
//
// Root cause: recover works on the part's own state. Its rebaseOpen (the
// step that makes the transaction's record of the base take the restored
// files, whose inodes and ctimes are new) rewrites the part's copy of
// base.manifest (t.st), not the whole's (t.whole().st), so the whole's
// record still holds a.txt's stat facts from open, the restored a.txt
// differs from them, and with no ancestor to merge from it is drift.
func TestKnownBreakAttack12PartKilledMidApplyStrandsTheWhole(t *testing.T) {
	for _, point := range []string{"apply:1", "applied"} {
		t.Run(point, func(t *testing.T) {
			x := newH(t)
			partialTx(t, x, "k")
			r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=" + point}, "commit", "k", "--", "a.txt")
			if r.Code != -1 {
				t.Fatalf("the fault point %s did not kill airlock: %v", point, r)
			}
			wantCode(t, x.airlock("recover", "--workdir", x.base), 0)
			wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
			if show := x.airlock("show", "k.1"); !strings.Contains(show.Stdout, "InterruptedApply") {
				t.Fatalf("the part is not refused InterruptedApply after recover:\n%s", show.Stdout)
			}
			r = x.airlock("commit", "k", "--", "a.txt")
			if r.Code != 0 {
				t.Errorf("retrying the part after recover rolled it back:\n%s", r)
			}
			r = x.airlock("commit", "k")
			if r.Code != 0 {
				rb := x.airlock("rebase", "k")
				t.Fatalf("committing the transaction after recover rolled its part back is refused (rebase exit %d):\n%s", rb.Code, r)
			}
			wantFiles(t, x, "a-new\n", "b-new\n", "c-new\n")
		})
	}
}

// The documented window: killed after the part's receipt, before the
// transaction records the landing. recover finds k.1 committed; k still
// lists a.txt. Then:
//
//   - undo k.1 puts a.txt back; committing the rest of k lands a.txt
//     again: the part's content is re-applied over the undo;
//   - a person edits a.txt; committing the rest (b.txt, c.txt) is refused
//     for a path the rest does not change.
//
// Root cause: recover never completes the advance (Tx.advance runs only
// in commitPart, after commitLocked returns); it has the part's receipt
// (part_of, paths) and frozen change set but does not make the whole's
// manifests take them, so the landed path stays a change of the whole
// forever, against the base record of open.
func TestKnownBreakAttack12WindowLeavesLandedPathAChange(t *testing.T) {
	for _, after := range []string{"undo", "human edit"} {
		t.Run(after, func(t *testing.T) {
			x := newH(t)
			partialTx(t, x, "w")
			r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=recorded"}, "commit", "w", "--", "a.txt")
			if r.Code != -1 {
				t.Fatalf("the fault point did not kill airlock: %v", r)
			}
			wantCode(t, x.airlock("recover", "--workdir", x.base), 0)
			want := "a-old\n"
			if after == "undo" {
				wantCode(t, x.exec(run{dir: x.base, args: []string{"undo", "w.1"}}), 0)
			} else {
				writeFile(t, filepath.Join(x.base, "a.txt"), "a-human\n")
				want = "a-human\n"
			}
			if got, w := nameStatus(t, x, "w"), "M\tb.txt\nM\tc.txt\n"; got != w {
				t.Errorf("the rest after recover and %s:\n%s\nwant:\n%s", after, got, w)
			}
			r = x.airlock("commit", "w")
			if r.Code != 0 {
				t.Fatalf("the rest does not commit after recover and %s:\n%s", after, r)
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "a.txt")); got != want {
				t.Errorf("a.txt = %q after the rest landed, want %q (what %s left)", got, want, after)
			}
		})
	}
}
