package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The outside review of airlock rebase and the Conflicted refusal
// (attack8): each test drives the real binary as a user, an agent or a
// hostile same-user process would, and holds one guarantee. The attacks
// that break a guarantee today are in e2e_attack8_breaks_test.go
// (airlock_known_breaks).

// Seven lines, the first edited on both sides (a conflict), and a file
// whose edits lie apart (a merge).
const (
	a8Text        = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
	a8TextAgent   = "one by the agent\ntwo\nthree\nfour\nfive\nsix\nseven\n"
	a8TextHuman   = "one by the human\ntwo\nthree\nfour\nfive\nsix\nseven\n"
	a8Merge       = "a\nb\nc\nd\ne\nf\ng\n"
	a8MergeAgent  = "a\nb\nc\nd\ne\nf\ng by the agent\n"
	a8MergeHuman  = "a by the human\nb\nc\nd\ne\nf\ng\n"
	a8MergeBoth   = "a by the human\nb\nc\nd\ne\nf\ng by the agent\n"
	a8TextMarked  = "<<<<<<< transaction t1\none by the agent\n||||||| base as t1 had it\none\n=======\none by the human\n>>>>>>> base now\ntwo\nthree\nfour\nfive\nsix\nseven\n"
	a8TextSettled = "one by the agent and the human\ntwo\nthree\nfour\nfive\nsix\nseven\n"
)

// a8Git makes the scenario's base a git repository holding files, all
// committed: the rebase's ancestor is HEAD's blob.
func a8Git(t *testing.T, x *h, files tree) func(args ...string) string {
	t.Helper()
	testbin.Require(t, "git", "git gives the rebase its ancestor (HEAD at open)")
	build(t, x.base, files)
	git := func(args ...string) string {
		t.Helper()
		return x.sh(x.base, nil, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	return git
}

// a8SkipGit leaves the base's repository out of a snapshot.
func a8SkipGit(rel string) bool { return rel == ".git" || strings.HasPrefix(rel, ".git/") }

// a8Conflict opens t1 over a git base (with the extra open flags), has the
// agent and the human edit text.txt's first line (a conflict) and
// merge.txt at either end (a merge), the human change notes.txt, and
// rebases t1: the staged text.txt holds the markers.
func a8Conflict(t *testing.T, x *h, open ...string) string {
	t.Helper()
	a8Git(t, x, tree{"text.txt": F(0o644, a8Text), "merge.txt": F(0o644, a8Merge), "notes.txt": F(0o644, "notes v1\n")})
	wantCode(t, x.airlock(append([]string{"open", "--workdir", x.base, "--id", "t1"}, open...)...), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "text.txt"), a8TextAgent)
	writeFile(t, filepath.Join(staged, "merge.txt"), a8MergeAgent)
	writeFile(t, filepath.Join(x.base, "text.txt"), a8TextHuman)
	writeFile(t, filepath.Join(x.base, "merge.txt"), a8MergeHuman)
	writeFile(t, filepath.Join(x.base, "notes.txt"), "notes v2\n")
	r := x.airlock("rebase", "t1")
	wantCode(t, r, 0)
	if want := "taken    notes.txt\nmerged   merge.txt\nconflict text.txt\n"; r.Stdout != want {
		t.Fatalf("rebase printed %q, want %q", r.Stdout, want)
	}
	if got := testbin.ReadFile(t, filepath.Join(staged, "text.txt")); got != a8TextMarked {
		t.Fatalf("the staged text.txt after the rebase is %q, want the markers %q", got, a8TextMarked)
	}
	return staged
}

// a8Refused checks a commit refused Conflicted naming text.txt, and the
// base's text.txt still the human's.
func a8Refused(t *testing.T, x *h, r result, what string) {
	t.Helper()
	if r.Code != 75 || r.Settle["refusal"] != "Conflicted" || r.Settle["refused_paths"] != "text.txt" {
		t.Errorf("%s: a commit was not refused Conflicted for text.txt: exit %d, refusal %q %q\n%s", what, r.Code, r.Settle["refusal"], r.Settle["refused_paths"], r.Stderr)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "text.txt")); got != a8TextHuman {
		t.Fatalf("%s: the base's text.txt is %q after the refused commit", what, got)
	}
}

// TestE2EAttack8ConflictedHoldsEveryMarkerForm: an agent that resolves a
// conflict halfway, or in an odd form, or resolves it and then writes the
// markers back, cannot land a marker: each form of a marker line git
// writes (any one of the three, bare or labelled, CRLF, with no final
// newline, in a file made executable) is refused Conflicted, with
// --approve too, and the base keeps the human's version. The resolution
// then lands over the base's newer content.
func TestE2EAttack8ConflictedHoldsEveryMarkerForm(t *testing.T) {
	x := newH(t)
	staged := a8Conflict(t, x)
	text := filepath.Join(staged, "text.txt")
	a8Refused(t, x, x.airlock("commit", "t1"), "markers as the rebase wrote them")
	for _, tc := range []struct{ name, content string }{
		{"the closing marker left", "one by the agent\ntwo\nthree\nfour\nfive\nsix\nseven\n>>>>>>> base now\n"},
		{"the opening marker bare", "<<<<<<<\none by the agent\n"},
		{"the ancestor marker with no final newline", "one by the agent\n||||||| base as t1 had it"},
		{"CRLF markers", "<<<<<<< transaction t1\r\none by the agent\r\n=======\r\none by the human\r\n>>>>>>> base now\r\n"},
		{"a closing marker alone in a CRLF file", "one by the agent\r\n>>>>>>>\r\n"},
	} {
		writeFile(t, text, tc.content)
		a8Refused(t, x, x.airlock("commit", "t1"), tc.name)
	}
	writeFile(t, text, a8TextMarked)
	if err := os.Chmod(text, 0o755); err != nil {
		t.Fatal(err)
	}
	a8Refused(t, x, x.airlock("commit", "t1"), "markers in a file made executable")
	a8Refused(t, x, x.airlock("commit", "t1", "--approve"), "markers, commit --approve")

	// Resolved, then marked again: the record of the conflict stays.
	writeFile(t, text, a8TextSettled)
	if err := os.Chmod(text, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := x.airlock("show", "t1", "--json"); strings.Contains(r.Stdout, "\n  \"conflicts\": [") {
		t.Errorf("show lists a conflict once resolved:\n%s", r.Stdout)
	}
	writeFile(t, text, a8TextMarked)
	a8Refused(t, x, x.airlock("commit", "t1"), "markers written back after a resolution")

	writeFile(t, text, a8TextSettled)
	r := x.airlock("commit", "t1")
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "2", "added": "0", "deleted": "0", "merged_paths": ""})
	wantTree(t, "base after the resolution landed", tree{
		"text.txt": F(0o644, a8TextSettled), "merge.txt": F(0o644, a8MergeBoth), "notes.txt": F(0o644, "notes v2\n"),
	}, snapshot(t, x.base, a8SkipGit))
}

// TestE2EAttack8ConflictedNotTriggeredByHeadingsOrOtherFiles: a
// resolution whose Markdown has setext headings (a line of seven '=')
// lands, and so does a file the rebase never marked that holds
// marker-like lines (a document about merge conflicts the agent wrote).
func TestE2EAttack8ConflictedNotTriggeredByHeadingsOrOtherFiles(t *testing.T) {
	x := newH(t)
	staged := a8Conflict(t, x)
	resolved := "Title\n=======\none by the agent and the human\ntwo\nthree\nfour\nfive\nsix\nseven\n"
	writeFile(t, filepath.Join(staged, "text.txt"), resolved)
	doc := "How a conflict looks:\n<<<<<<< ours\nmine\n=======\nyours\n>>>>>>> theirs\n"
	writeFile(t, filepath.Join(staged, "conflicts.md"), doc)
	r := x.airlock("commit", "t1")
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "2", "added": "1"})
	if got := testbin.ReadFile(t, filepath.Join(x.base, "text.txt")); got != resolved {
		t.Errorf("base text.txt = %q, want %q", got, resolved)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "conflicts.md")); got != doc {
		t.Errorf("base conflicts.md = %q, want %q", got, doc)
	}
}

// TestE2EAttack8RebaseOnCopyAndWorktree: the rebase takes, merges and
// marks the same on the copy and the worktree backends, and the
// resolution lands the same.
func TestE2EAttack8RebaseOnCopyAndWorktree(t *testing.T) {
	for _, backend := range []string{"copy", "worktree"} {
		t.Run(backend, func(t *testing.T) {
			x := newH(t)
			staged := a8Conflict(t, x, "--backend", backend)
			a8Refused(t, x, x.airlock("commit", "t1"), backend)
			writeFile(t, filepath.Join(staged, "text.txt"), a8TextSettled)
			r := x.airlock("commit", "t1")
			wantCode(t, r, 0)
			for rel, want := range map[string]string{"text.txt": a8TextSettled, "merge.txt": a8MergeBoth, "notes.txt": "notes v2\n"} {
				if got := testbin.ReadFile(t, filepath.Join(x.base, rel)); got != want {
					t.Errorf("base %s = %q, want %q", rel, got, want)
				}
			}
		})
	}
}

// TestE2EAttack8OverlayRefusedClearly: an overlay transaction is not
// rebased (exit 125, saying why), and is left as it was: its commit lands
// the agent's edit beside the base's change.
func TestE2EAttack8OverlayRefusedClearly(t *testing.T) {
	x := newH(t)
	if err := os.MkdirAll(x.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := x.airlock("doctor"); !doctorSupports(r.Stdout, "overlay") {
		testbin.Missing(t, "overlay unsupported here (airlock doctor):\n%s", r.Stdout)
	}
	build(t, x.base, tree{"code.txt": F(0o644, "code v1\n"), "notes.txt": F(0o644, "notes v1\n")})
	waitPastClock(t, x.state, x.base, "code.txt", "notes.txt")
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "ov", "--backend", "overlay"), 0)
	writeFile(t, filepath.Join(x.stagedPath("ov"), "code.txt"), "code by the agent\n")
	writeFile(t, filepath.Join(x.base, "notes.txt"), "notes v2\n")
	r := x.airlock("rebase", "ov")
	wantCode(t, r, 125)
	if !strings.Contains(r.Stderr, "overlay") || !strings.Contains(r.Stderr, "follows the base already") {
		t.Errorf("the overlay refusal does not say why:\n%s", r.Stderr)
	}
	r = x.airlock("commit", "ov")
	wantCode(t, r, 0)
	wantTree(t, "base after the overlay commit", tree{"code.txt": F(0o644, "code by the agent\n"), "notes.txt": F(0o644, "notes v2\n")}, snapshot(t, x.base, nil))
}

// TestE2EAttack8BaseChangedAfterRebaseNotOverwritten: after a rebase and
// its resolution, the human changes the base again: reverts their edit of
// merge.txt (which the rebase merged) and edits notes.txt (which it took).
// The commit must not land the rebase's stale view over either: it lands
// with the human's newest content kept, or refuses and changes nothing.
func TestE2EAttack8BaseChangedAfterRebaseNotOverwritten(t *testing.T) {
	x := newH(t)
	staged := a8Conflict(t, x)
	writeFile(t, filepath.Join(staged, "text.txt"), a8TextSettled)
	writeFile(t, filepath.Join(x.base, "merge.txt"), a8Merge)
	writeFile(t, filepath.Join(x.base, "notes.txt"), "notes v3\n")
	r := x.airlock("commit", "t1")
	switch r.Code {
	case 0:
		if got := testbin.ReadFile(t, filepath.Join(x.base, "merge.txt")); got != a8MergeAgent {
			t.Errorf("the commit reverted the human's revert made after the rebase: merge.txt = %q, want %q", got, a8MergeAgent)
		}
	case 75:
		if got := testbin.ReadFile(t, filepath.Join(x.base, "merge.txt")); got != a8Merge {
			t.Errorf("a refused commit changed merge.txt: %q", got)
		}
		if got := testbin.ReadFile(t, filepath.Join(x.base, "text.txt")); got != a8TextHuman {
			t.Errorf("a refused commit changed text.txt: %q", got)
		}
	default:
		t.Fatalf("commit after the base moved again: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "notes.txt")); got != "notes v3\n" {
		t.Errorf("the commit overwrote notes.txt, changed in the base after the rebase took it: %q", got)
	}
}

// TestE2EAttack8RebaseWaitsOutAPausedCommit: a rebase started while a
// commit of the same transaction is paused after its checks waits for the
// commit's lock; the commit lands as checked, and the rebase then refuses
// a committed transaction without touching the base or the staged tree.
func TestE2EAttack8RebaseWaitsOutAPausedCommit(t *testing.T) {
	x := newH(t)
	a8Git(t, x, tree{"code.txt": F(0o644, "code v1\n"), "merge.txt": F(0o644, a8Merge), "notes.txt": F(0o644, "notes v1\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "code.txt"), "code by the agent\n")
	writeFile(t, filepath.Join(staged, "merge.txt"), a8MergeAgent)
	writeFile(t, filepath.Join(x.base, "merge.txt"), a8MergeHuman)
	writeFile(t, filepath.Join(x.base, "notes.txt"), "notes v2\n")

	pause := testbin.RealDir(t)
	c := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", "t1"}})
	waitFile(t, filepath.Join(pause, "reached"))
	rb := x.start(run{args: []string{"rebase", "t1"}})
	touch(t, filepath.Join(pause, "continue"))
	r := c.WaitSettled()
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "merged_paths": "merge.txt"})
	r = rb.WaitSettled()
	if r.Code != 125 || !strings.Contains(r.Stderr, "only an open or refused one can be rebased") {
		t.Errorf("a rebase queued behind a commit: exit %d\n%s", r.Code, r.Stderr)
	}
	wantTree(t, "base after the commit", tree{
		"code.txt": F(0o644, "code by the agent\n"), "merge.txt": F(0o644, a8MergeBoth), "notes.txt": F(0o644, "notes v2\n"),
	}, snapshot(t, x.base, a8SkipGit))
}

// TestE2EAttack8TwoRebasesAtOnce: a second rebase of a transaction whose
// first rebase is paused after measuring waits for it, then finds the
// transaction on the base already and changes nothing; the commit lands
// the merge once.
func TestE2EAttack8TwoRebasesAtOnce(t *testing.T) {
	x := newH(t)
	a8Git(t, x, tree{"merge.txt": F(0o644, a8Merge), "notes.txt": F(0o644, "notes v1\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "merge.txt"), a8MergeAgent)
	writeFile(t, filepath.Join(x.base, "merge.txt"), a8MergeHuman)
	writeFile(t, filepath.Join(x.base, "notes.txt"), "notes v2\n")

	pause := testbin.RealDir(t)
	first := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=rebase-measured:" + pause}, args: []string{"rebase", "t1"}})
	waitFile(t, filepath.Join(pause, "reached"))
	second := x.start(run{args: []string{"rebase", "t1"}})
	touch(t, filepath.Join(pause, "continue"))
	r := first.WaitSettled()
	wantCode(t, r, 0)
	if r.Stdout != "taken    notes.txt\nmerged   merge.txt\n" {
		t.Errorf("the first rebase printed %q", r.Stdout)
	}
	r = second.WaitSettled()
	wantCode(t, r, 0)
	if r.Stdout != "" || !strings.Contains(r.Stderr, "on the base as it is now already") {
		t.Errorf("the second rebase took something in again: %q\n%s", r.Stdout, r.Stderr)
	}
	wantTree(t, "staged after two rebases", tree{"merge.txt": F(0o644, a8MergeBoth), "notes.txt": F(0o644, "notes v2\n")}, snapshot(t, staged, a8SkipGit))
	r = x.airlock("commit", "t1")
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1", "merged_paths": ""})
	wantTree(t, "base", tree{"merge.txt": F(0o644, a8MergeBoth), "notes.txt": F(0o644, "notes v2\n")}, snapshot(t, x.base, a8SkipGit))
}

// TestE2EAttack8UndoOfARebasedCommit: undoing the commit of a rebased
// transaction brings back the base as the human left it (their newer
// content), not the base as the transaction first saw it.
func TestE2EAttack8UndoOfARebasedCommit(t *testing.T) {
	x := newH(t)
	staged := a8Conflict(t, x)
	writeFile(t, filepath.Join(staged, "text.txt"), a8TextSettled)
	wantCode(t, x.airlock("commit", "t1"), 0)
	r := x.airlock("undo", "t1", "--workdir", x.base)
	wantCode(t, r, 0)
	wantTree(t, "base after the undo", tree{
		"text.txt": F(0o644, a8TextHuman), "merge.txt": F(0o644, a8MergeHuman), "notes.txt": F(0o644, "notes v2\n"),
	}, snapshot(t, x.base, a8SkipGit))
}

// TestE2EAttack8RebaseTakesEveryShape: the base, where the transaction
// changed nothing, turns a directory into a file and a file into an empty
// directory, makes a script executable, deletes a file and a directory
// tree, and adds a file and a directory with a file in it; the rebase
// takes each in exactly, and the commit lands only the agent's edit over
// them. (A retargeted symlink and a file turned into a directory with
// something in it are refused today: e2e_attack8_breaks_test.go.)
func TestE2EAttack8RebaseTakesEveryShape(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{
		"code.txt": F(0o644, "code v1\n"),
		"d/a":      F(0o644, "a\n"), "f": F(0o644, "f\n"), "s": L("code.txt"), "run.sh": F(0o644, "#!/bin/sh\n"),
		"gone.txt": F(0o644, "gone\n"), "e/x/y": F(0o644, "y\n"), "target.txt": F(0o644, "t\n"),
	})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "code.txt"), "code by the agent\n")
	for _, err := range []error{
		os.RemoveAll(filepath.Join(x.base, "d")), os.WriteFile(filepath.Join(x.base, "d"), []byte("d is a file\n"), 0o644),
		os.Remove(filepath.Join(x.base, "f")), os.Mkdir(filepath.Join(x.base, "f"), 0o750),
		os.MkdirAll(filepath.Join(x.base, "n", "m"), 0o755), os.WriteFile(filepath.Join(x.base, "n", "m", "h"), []byte("h\n"), 0o600),
		os.Chmod(filepath.Join(x.base, "run.sh"), 0o755),
		os.Remove(filepath.Join(x.base, "gone.txt")), os.RemoveAll(filepath.Join(x.base, "e")),
		os.WriteFile(filepath.Join(x.base, "new.txt"), []byte("new\n"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := snapshot(t, x.base, nil)
	r := x.airlock("rebase", "t1")
	wantCode(t, r, 0)
	got := snapshot(t, staged, func(rel string) bool { return rel == "code.txt" })
	delete(want, "code.txt")
	wantTree(t, "staged tree after the rebase (code.txt aside)", want, got)
	r = x.airlock("commit", "t1")
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1", "added": "0", "deleted": "0"})
	want["code.txt"] = F(0o644, "code by the agent\n")
	wantTree(t, "base after the commit", want, snapshot(t, x.base, nil))
}

// TestE2EAttack8NonUTF8NameConflict: a conflict in a file whose name is
// not UTF-8 is marked, recorded and refused under its own bytes, and its
// resolution lands.
func TestE2EAttack8NonUTF8NameConflict(t *testing.T) {
	x := newH(t)
	name := "caf\xe9.txt"
	a8Git(t, x, tree{name: F(0o644, a8Text)})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, name), a8TextAgent)
	writeFile(t, filepath.Join(x.base, name), a8TextHuman)
	r := x.airlock("rebase", "t1")
	wantCode(t, r, 0)
	if got := testbin.ReadFile(t, filepath.Join(staged, name)); got != a8TextMarked {
		t.Fatalf("the staged %q after the rebase is %q", name, got)
	}
	r = x.airlock("commit", "t1")
	if r.Code != 75 || r.Settle["refusal"] != "Conflicted" || r.Settle["refused_paths"] != "caf%E9.txt" {
		t.Errorf("markers in a non-UTF-8 name: exit %d, refusal %q %q\n%s", r.Code, r.Settle["refusal"], r.Settle["refused_paths"], r.Stderr)
	}
	writeFile(t, filepath.Join(staged, name), a8TextSettled)
	wantCode(t, x.airlock("commit", "t1"), 0)
	if got := testbin.ReadFile(t, filepath.Join(x.base, name)); got != a8TextSettled {
		t.Errorf("base %q = %q", name, got)
	}
}

// TestE2EAttack8ProtectedConflictNeedsBoth: a conflict in a protected
// path (.envrc) is refused Conflicted even with --approve; resolved, it
// still needs the approval, and then lands.
func TestE2EAttack8ProtectedConflictNeedsBoth(t *testing.T) {
	x := newH(t)
	a8Git(t, x, tree{".envrc": F(0o644, a8Text)})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, ".envrc"), a8TextAgent)
	writeFile(t, filepath.Join(x.base, ".envrc"), a8TextHuman)
	wantCode(t, x.airlock("rebase", "t1"), 0)
	for _, args := range [][]string{{"commit", "t1"}, {"commit", "t1", "--approve"}} {
		r := x.airlock(args...)
		if r.Code != 75 || r.Settle["refusal"] != "Conflicted" {
			t.Errorf("%q with markers in .envrc: exit %d, refusal %q\n%s", args, r.Code, r.Settle["refusal"], r.Stderr)
		}
	}
	writeFile(t, filepath.Join(staged, ".envrc"), a8TextSettled)
	r := x.airlock("commit", "t1")
	if r.Code != 75 || r.Settle["refusal"] != "ProtectedPathNotApproved" {
		t.Errorf("a resolved protected path without approval: exit %d, refusal %q", r.Code, r.Settle["refusal"])
	}
	wantCode(t, x.airlock("commit", "t1", "--approve"), 0)
	if got := testbin.ReadFile(t, filepath.Join(x.base, ".envrc")); got != a8TextSettled {
		t.Errorf("base .envrc = %q", got)
	}
}

// TestE2EAttack8ExcludedStaysOut: a path the transaction was opened
// without (--exclude) that the base changes is not taken into the staged
// workspace, and the commit leaves the base's version of it alone.
func TestE2EAttack8ExcludedStaysOut(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"code.txt": F(0o644, "code v1\n"), "build/out": F(0o644, "out v1\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1", "--exclude", "build/"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "code.txt"), "code by the agent\n")
	writeFile(t, filepath.Join(x.base, "build", "out"), "out v2\n")
	writeFile(t, filepath.Join(x.base, "build", "new"), "new\n")
	r := x.airlock("rebase", "t1")
	wantCode(t, r, 0)
	if r.Stdout != "" {
		t.Errorf("the rebase took in excluded paths: %q", r.Stdout)
	}
	if _, err := os.Lstat(filepath.Join(staged, "build")); err == nil {
		t.Errorf("the excluded build/ is in the staged workspace after the rebase")
	}
	wantCode(t, x.airlock("commit", "t1"), 0)
	wantTree(t, "base", tree{"code.txt": F(0o644, "code by the agent\n"), "build": D(0o755), "build/out": F(0o644, "out v2\n"), "build/new": F(0o644, "new\n")}, snapshot(t, x.base, nil))
}

// TestE2EAttack8GitHeadMoved: the human commits their edit (HEAD moves)
// after the open, then edits another file; the rebase's ancestor is HEAD
// as it was at open, so both human edits survive the merge and the
// commit lands them with the agent's.
func TestE2EAttack8GitHeadMoved(t *testing.T) {
	x := newH(t)
	git := a8Git(t, x, tree{"text.txt": F(0o644, a8Text), "merge.txt": F(0o644, a8Merge)})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	textAgentLast := "one\ntwo\nthree\nfour\nfive\nsix\nseven by the agent\n"
	writeFile(t, filepath.Join(staged, "text.txt"), textAgentLast)
	writeFile(t, filepath.Join(staged, "merge.txt"), a8MergeAgent)
	writeFile(t, filepath.Join(x.base, "text.txt"), a8TextHuman)
	git("commit", "-qam", "the human's edit")
	writeFile(t, filepath.Join(x.base, "merge.txt"), a8MergeHuman)
	r := x.airlock("rebase", "t1")
	wantCode(t, r, 0)
	if r.Stdout != "merged   merge.txt\nmerged   text.txt\n" {
		t.Errorf("rebase printed %q", r.Stdout)
	}
	wantCode(t, x.airlock("commit", "t1"), 0)
	wantTree(t, "base", tree{
		"text.txt":  F(0o644, "one by the human\ntwo\nthree\nfour\nfive\nsix\nseven by the agent\n"),
		"merge.txt": F(0o644, a8MergeBoth),
	}, snapshot(t, x.base, a8SkipGit))
}

// TestE2EAttack8FailedRebaseThenCommit: a rebase that fails partway
// through its writes (the agent rewrites a file the rebase merges, after
// the re-check, so a path taken before it is written already) leaves a
// transaction whose commit keeps the base's newer content, the agent's
// newest write, and lands no stale view.
func TestE2EAttack8FailedRebaseThenCommit(t *testing.T) {
	x := newH(t)
	a8Git(t, x, tree{"a.txt": F(0o644, "a v1\n"), "b.txt": F(0o644, a8Merge)})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "b.txt"), a8MergeAgent)
	writeFile(t, filepath.Join(x.base, "a.txt"), "a v2\n")
	writeFile(t, filepath.Join(x.base, "b.txt"), a8MergeHuman)

	pause := testbin.RealDir(t)
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=rebase-measured:" + pause}, args: []string{"rebase", "t1"}})
	waitFile(t, filepath.Join(pause, "reached"))
	newest := "a\nb\nc\nd\ne\nf\ng by the agent, once more\n"
	writeFile(t, filepath.Join(staged, "b.txt"), newest)
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	if r.Code != 125 || !strings.Contains(r.Stderr, `the staged b.txt changed while the rebase merged it`) {
		t.Fatalf("a rebase over a merged file rewritten meanwhile: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := testbin.ReadFile(t, filepath.Join(staged, "b.txt")); got != newest {
		t.Fatalf("the agent's newest write was lost: %q", got)
	}
	if got := testbin.ReadFile(t, filepath.Join(staged, "a.txt")); got != "a v2\n" {
		t.Fatalf("the rebase failed before it took a.txt (%q): not the partway failure this test is for", got)
	}
	r = x.airlock("commit", "t1")
	wantCode(t, r, 0)
	wantTree(t, "base", tree{
		"a.txt": F(0o644, "a v2\n"), "b.txt": F(0o644, "a by the human\nb\nc\nd\ne\nf\ng by the agent, once more\n"),
	}, snapshot(t, x.base, a8SkipGit))
}

// TestE2EAttack8ConflictResolvedByDeletion: the agent resolves a conflict
// by deleting the file: the commit deletes it from the base, lands no
// marker, and the base's other newer content stays.
func TestE2EAttack8ConflictResolvedByDeletion(t *testing.T) {
	x := newH(t)
	staged := a8Conflict(t, x)
	if err := os.Remove(filepath.Join(staged, "text.txt")); err != nil {
		t.Fatal(err)
	}
	r := x.airlock("commit", "t1")
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"deleted": "1", "modified": "1"})
	wantTree(t, "base", tree{"merge.txt": F(0o644, a8MergeBoth), "notes.txt": F(0o644, "notes v2\n")}, snapshot(t, x.base, a8SkipGit))
}

// TestE2EAttack8RebaseRefusesWhileRunToolCommandWrites: while a command
// of the MCP run tool is at work in the staged workspace, airlock rebase
// from the command line refuses at once and changes nothing; once the
// command has written and ended, the rebase takes the base's change in and
// the commit lands both, the command's write included.
func TestE2EAttack8RebaseRefusesWhileRunToolCommandWrites(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"code.txt": F(0o644, "code v1\n"), "notes.txt": F(0o644, "notes v1\n")})
	s := x.serveMCP()
	id, staged := s.open(nil)
	hold := testbin.RealDir(t)
	ready, fifo := filepath.Join(hold, "ready"), filepath.Join(hold, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan toolResult, 1)
	go func() {
		done <- s.call("run", map[string]any{"id": id, "command": "touch '" + ready + "' && read line < '" + fifo + "' && echo 'code by the command' > code.txt"})
	}()
	waitFile(t, ready)
	writeFile(t, filepath.Join(x.base, "notes.txt"), "notes v2\n")
	r := x.airlock("rebase", id)
	if r.Code == 0 || !strings.Contains(r.Stderr, "has a command running in its staged workspace") {
		t.Errorf("a rebase while the run tool's command works: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := testbin.ReadFile(t, filepath.Join(staged, "notes.txt")); got != "notes v1\n" {
		t.Errorf("the refused rebase changed the staged notes.txt: %q", got)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.isErr || res.exitCode() != 0 {
		t.Fatalf("the held command: %s", res.text)
	}
	r = x.airlock("rebase", id)
	wantCode(t, r, 0)
	if r.Stdout != "taken    notes.txt\n" {
		t.Errorf("rebase printed %q", r.Stdout)
	}
	wantCode(t, x.airlock("commit", id), 0)
	wantTree(t, "base", tree{"code.txt": F(0o644, "code by the command\n"), "notes.txt": F(0o644, "notes v2\n")}, snapshot(t, x.base, nil))
}

// Four attacks below broke the rebase as first built; each is fixed and
// holds now.

// TestE2EAttack8RebaseTakesRetargetedSymlink: the base retargets a
// symlink the transaction never touched, and the rebase takes the new
// target in. (It refused every time at first: the staged manifest keeps
// no size for a symlink, and the re-check compared Lstat's.)
func TestE2EAttack8RebaseTakesRetargetedSymlink(t *testing.T) {
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

// TestE2EAttack8RebaseTakesFileTurnedPopulatedDir: the base replaces a
// file the transaction never touched with a directory holding a file, and
// the rebase takes both in. (It refused every time at first: under the
// staged file f, Lstat of f/h is ENOTDIR, which the re-check took for a
// write.)
func TestE2EAttack8RebaseTakesFileTurnedPopulatedDir(t *testing.T) {
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

// TestE2EAttack8ConflictedHoldsAfterMove: the conflict markers a rebase
// wrote in text.txt, moved by the agent to another path (renamed, or put
// behind a symlink left at text.txt), still refuse the commit Conflicted:
// a marker line with the transaction's labels counts in any file. (They
// landed at first: only the recorded paths were read.)
func TestE2EAttack8ConflictedHoldsAfterMove(t *testing.T) {
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

// TestE2EAttack8ConflictedNotOnTheFilesOwnMarkerLines: a file about
// merge conflicts holds an example of git's markers, as the base's own
// version does. Its rebase conflict resolved, the example stays, and the
// commit lands: a marker line without the transaction's labels counts
// only beyond those the base's version holds. (It was refused Conflicted
// forever at first.)
func TestE2EAttack8ConflictedNotOnTheFilesOwnMarkerLines(t *testing.T) {
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

// TestE2EAttack8MergedPathTakesTheBasesNextChange: a rebase merged
// merge.txt (the agent's edit at the end, the human's at the start); the
// human then edits its middle, apart from both. The commit merges the
// three (the base's content the rebase merged is kept among the originals,
// the ancestor of the next merge). (At first the commit refused BaseDrift
// and a rebase "no known ancestor": the transaction was stuck.)
func TestE2EAttack8MergedPathTakesTheBasesNextChange(t *testing.T) {
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
