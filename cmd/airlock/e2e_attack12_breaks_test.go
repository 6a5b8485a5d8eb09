//go:build airlock_known_breaks && linux

package main_test

import (
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Guarantees of partial commit that do not hold today (attack12),
// compiled only with the build tag airlock_known_breaks:
// go test -tags 'airlock_faults airlock_known_breaks' -run KnownBreakAttack12 ./cmd/airlock

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
