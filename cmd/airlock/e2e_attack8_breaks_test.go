//go:build airlock_known_breaks

package main_test

import (
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The break of the outside review of airlock rebase (attack8) that is not
// fixed: it fails today, and is compiled only with the build tag
// airlock_known_breaks (the four others are fixed: e2e_attack8_test.go)
// (go test -tags 'airlock_faults airlock_known_breaks' -run KnownBreakAttack8 ./cmd/airlock).

// TestKnownBreakAttack8MergedPathStuckAfterBaseMovesAgain: a rebase merged
// merge.txt (the agent's edit at the end, the human's at the start); the
// human then edits its middle, apart from both. The commit refuses
// BaseDrift ("cannot be merged") and the rebase that would get out of it
// refuses too ("no known ancestor"): the first rebase read the base's
// bytes it made the transaction's ancestor but kept them nowhere a merge
// looks (originals, HEAD's blob), so a transaction rebased once can never
// take in a second change to a path both sides changed. Nothing is lost
// (TestE2EAttack8BaseChangedAfterRebaseNotOverwritten), but the only ways
// out are a hand-made copy of the base's version or a discard.
func TestKnownBreakAttack8MergedPathStuckAfterBaseMovesAgain(t *testing.T) {
	x := newH(t)
	a8Git(t, x, tree{"merge.txt": F(0o644, a8Merge)})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	writeFile(t, filepath.Join(x.stagedPath("t1"), "merge.txt"), a8MergeAgent)
	writeFile(t, filepath.Join(x.base, "merge.txt"), a8MergeHuman)
	wantCode(t, x.airlock("rebase", "t1"), 0)
	later := "a by the human\nb\nc\nd by the human later\ne\nf\ng\n"
	writeFile(t, filepath.Join(x.base, "merge.txt"), later)
	r := x.airlock("commit", "t1")
	if r.Code != 0 {
		r2 := x.airlock("rebase", "t1")
		if r2.Code != 0 {
			t.Fatalf("after the base moved again, neither a commit (exit %d, %s) nor a rebase (exit %d) gets the transaction out:\n%s", r.Code, r.Settle["refusal"], r2.Code, r2.Stderr)
		}
		wantCode(t, x.airlock("commit", "t1"), 0)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "merge.txt")); got != "a by the human\nb\nc\nd by the human later\ne\nf\ng by the agent\n" {
		t.Errorf("base merge.txt = %q", got)
	}
}
