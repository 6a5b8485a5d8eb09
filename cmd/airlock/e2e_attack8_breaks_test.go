//go:build airlock_known_breaks

package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Breaks the outside review of airlock rebase (attack8) found: each test
// fails today, and is compiled only with the build tag
// airlock_known_breaks
// (go test -tags 'airlock_faults airlock_known_breaks' -run KnownBreakAttack8 ./cmd/airlock).

// a8Shape opens t1 over a plain directory holding code.txt, a file f and
// a symlink s (to code.txt), has the agent edit code.txt only, then
// changes the base with change, and rebases t1.
func a8Shape(t *testing.T, change func(base string) error) (*h, string, result) {
	t.Helper()
	x := newH(t)
	build(t, x.base, tree{"code.txt": F(0o644, "code v1\n"), "f": F(0o644, "f\n"), "s": L("code.txt"), "target.txt": F(0o644, "t\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "code.txt"), "code by the agent\n")
	if err := change(x.base); err != nil {
		t.Fatal(err)
	}
	return x, staged, x.airlock("rebase", "t1")
}

// TestKnownBreakAttack8RebaseRefusesRetargetedSymlink: the base retargets
// a symlink the transaction never touched. The contract says the staged
// workspace takes the base's symlink target; the rebase instead refuses,
// every time, that the staged "s" changed while it read (exit 125): the
// staged manifest records a symlink's size as 0 (manifest.FromStat) while
// stillUntouched compares it with Lstat's size (the target's length), so
// an untouched symlink reads as written, and the transaction can never be
// rebased.
func TestKnownBreakAttack8RebaseRefusesRetargetedSymlink(t *testing.T) {
	x, staged, r := a8Shape(t, func(base string) error {
		if err := os.Remove(filepath.Join(base, "s")); err != nil {
			return err
		}
		return os.Symlink("target.txt", filepath.Join(base, "s"))
	})
	if r.Code != 0 {
		t.Fatalf("a rebase over a retargeted symlink the transaction never touched: exit %d\n%s", r.Code, r.Stderr)
	}
	if got, err := os.Readlink(filepath.Join(staged, "s")); err != nil || got != "target.txt" {
		t.Errorf("the staged s points at %q (%v), want target.txt", got, err)
	}
	wantCode(t, x.airlock("commit", "t1"), 0)
}

// TestKnownBreakAttack8RebaseRefusesFileTurnedPopulatedDir: the base
// replaces a file the transaction never touched with a directory holding
// a file. The rebase refuses, every time, that the staged "f/h" changed
// while it read (exit 125): under the staged file f, Lstat of f/h is
// ENOTDIR, not "does not exist", so stillUntouched takes it for a write.
// (An empty directory in its place is taken: TestE2EAttack8RebaseTakesEveryShape.)
func TestKnownBreakAttack8RebaseRefusesFileTurnedPopulatedDir(t *testing.T) {
	x, staged, r := a8Shape(t, func(base string) error {
		if err := os.Remove(filepath.Join(base, "f")); err != nil {
			return err
		}
		if err := os.Mkdir(filepath.Join(base, "f"), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(base, "f", "h"), []byte("h\n"), 0o644)
	})
	if r.Code != 0 {
		t.Fatalf("a rebase over a file the base turned into a directory with a file: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := testbin.ReadFile(t, filepath.Join(staged, "f", "h")); got != "h\n" {
		t.Errorf("the staged f/h is %q", got)
	}
	wantCode(t, x.airlock("commit", "t1"), 0)
}

// TestKnownBreakAttack8ConflictedBypassedByMove: the conflict markers a
// rebase wrote in text.txt, moved by the agent to another path (renamed,
// or put behind a symlink left at text.txt), land: checkConflicts looks
// only at the recorded paths' own content, so the commit lands a file
// full of markers in the base.
func TestKnownBreakAttack8ConflictedBypassedByMove(t *testing.T) {
	for _, tc := range []struct {
		name string
		move func(staged string) error
	}{
		{"renamed", func(staged string) error {
			return os.Rename(filepath.Join(staged, "text.txt"), filepath.Join(staged, "text2.txt"))
		}},
		{"behind a symlink", func(staged string) error {
			if err := os.Rename(filepath.Join(staged, "text.txt"), filepath.Join(staged, "text2.txt")); err != nil {
				return err
			}
			return os.Symlink("text2.txt", filepath.Join(staged, "text.txt"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newH(t)
			staged := a8Conflict(t, x)
			if err := tc.move(staged); err != nil {
				t.Fatal(err)
			}
			r := x.airlock("commit", "t1")
			if r.Code != 75 || r.Settle["refusal"] != "Conflicted" {
				t.Errorf("a commit of the rebase's markers moved to text2.txt: exit %d, refusal %q\n%s", r.Code, r.Settle["refusal"], r.Stderr)
			}
			if b, err := os.ReadFile(filepath.Join(x.base, "text2.txt")); err == nil && strings.Contains(string(b), "<<<<<<< transaction t1") {
				t.Errorf("the base's text2.txt holds the rebase's conflict markers:\n%s", b)
			}
		})
	}
}

// TestKnownBreakAttack8ConflictedFalseOnLegitimateMarkerLines: a file
// about merge conflicts holds an example of git's markers at open, and so
// did the base before either side edited it. Its rebase conflict (the
// first line, edited on both sides) resolved correctly, the example stays,
// and the commit refuses Conflicted on it forever: hasMarkers cannot tell
// the rebase's markers from the file's own lines, nor is the record of the
// conflict ever cleared; only a discard gets out.
func TestKnownBreakAttack8ConflictedFalseOnLegitimateMarkerLines(t *testing.T) {
	x := newH(t)
	example := "An example:\n<<<<<<< HEAD\nmine\n=======\nyours\n>>>>>>> topic\n"
	a8Git(t, x, tree{"merging.md": F(0o644, "# Merging\n"+example)})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "merging.md"), "# Merging, by the agent\n"+example)
	writeFile(t, filepath.Join(x.base, "merging.md"), "# Merging, by the human\n"+example)
	r := x.airlock("rebase", "t1")
	wantCode(t, r, 0)
	if r.Stdout != "conflict merging.md\n" {
		t.Fatalf("rebase printed %q", r.Stdout)
	}
	resolved := "# Merging, by both\n" + example
	writeFile(t, filepath.Join(staged, "merging.md"), resolved)
	r = x.airlock("commit", "t1")
	if r.Code != 0 {
		t.Fatalf("a correctly resolved file whose own content shows git's markers: exit %d, refusal %q\n%s", r.Code, r.Settle["refusal"], r.Stderr)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "merging.md")); got != resolved {
		t.Errorf("base merging.md = %q, want %q", got, resolved)
	}
}

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
