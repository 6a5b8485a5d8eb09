package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// partialTx opens transaction id over a base of a.txt, b.txt and c.txt and
// changes all three in its staged tree.
func partialTx(t *testing.T, x *h, id string) string {
	t.Helper()
	for _, n := range []string{"a", "b", "c"} {
		writeFile(t, filepath.Join(x.base, n+".txt"), n+"-old\n")
	}
	staged := x.openTx(id)
	for _, n := range []string{"a", "b", "c"} {
		writeFile(t, filepath.Join(staged, n+".txt"), n+"-new\n")
	}
	return staged
}

// wantFiles checks the base's a.txt, b.txt and c.txt.
func wantFiles(t *testing.T, x *h, a, b, c string) {
	t.Helper()
	for n, want := range map[string]string{"a": a, "b": b, "c": c} {
		if got := testbin.ReadFile(t, filepath.Join(x.base, n+".txt")); got != want {
			t.Errorf("%s.txt = %q, want %q", n, got, want)
		}
	}
}

// nameStatus is `airlock diff ID --name-status`.
func nameStatus(t *testing.T, x *h, id string) string {
	t.Helper()
	r := x.airlock("diff", id, "--name-status")
	wantCode(t, r, 0)
	return r.Stdout
}

// A partial commit racing an edit of a path it names, in the base, between
// its checks and its apply: refused BaseDrift like any commit, nothing of
// it applied, no part left behind, and the transaction kept whole, to be
// committed again once the edit is dealt with.
func TestE2EPartialCommitRacesAnEditOfANamedPath(t *testing.T) {
	x := newH(t)
	partialTx(t, x, "race")
	pause := t.TempDir()
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", "race", "--", "a.txt", "b.txt"}})
	waitPaused(t, p, pause)
	writeFile(t, filepath.Join(x.base, "b.txt"), "b-human\n")
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	wantCode(t, r, 75)
	if r.Settle["tx"] != "race" || r.Settle["refusal"] != "BaseDrift" || r.Settle["refused_paths"] != "b.txt" {
		t.Fatalf("want the transaction refused BaseDrift naming b.txt:\n%s", r)
	}
	wantFiles(t, x, "a-old\n", "b-human\n", "c-old\n")
	if _, err := os.Lstat(filepath.Join(x.state, "tx", "race.1")); err == nil {
		t.Errorf("a refused part was left behind as race.1")
	}
	show := x.airlock("show", "race")
	if !strings.Contains(show.Stdout, "status:    refused") || !strings.Contains(show.Stdout, "changes:   +0 ~3 -0") {
		t.Errorf("the transaction is not kept refused with its three changes:\n%s", show.Stdout)
	}
	// The path that did not race lands on its own; the rest stays open.
	r = x.airlock("commit", "race", "--", "a.txt")
	wantCode(t, r, 0)
	if r.Settle["tx"] != "race.1" || r.Settle["part_of"] != "race" || r.Settle["paths"] != "a.txt" {
		t.Fatalf("want part race.1 of race landing a.txt:\n%s", r)
	}
	wantFiles(t, x, "a-new\n", "b-human\n", "c-old\n")
	show = x.airlock("show", "race")
	if !strings.Contains(show.Stdout, "changes:   +0 ~2 -0") {
		t.Errorf("the rest is not b.txt and c.txt:\n%s", show.Stdout)
	}
}

// The same race met half-way through the apply: a person saves a.txt after
// the part applied it. The apply is rolled back exactly (b.txt, applied
// after, is back as it was; the person's save is kept, in the transaction
// the part was of), and the transaction, rebased over the restored paths,
// commits the same part again.
func TestE2EPartialCommitRolledBackMidApply(t *testing.T) {
	x := newH(t)
	partialTx(t, x, "mid")
	pause := t.TempDir()
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=apply:1:" + pause}, args: []string{"commit", "mid", "--", "a.txt", "b.txt"}})
	waitPaused(t, p, pause)
	tmp := filepath.Join(x.base, ".a.tmp")
	writeFile(t, tmp, "a-new\nHUMAN-SAVE\n")
	must(t, os.Rename(tmp, filepath.Join(x.base, "a.txt")))
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	wantCode(t, r, 75)
	if r.Settle["tx"] != "mid" {
		t.Fatalf("the refusal is not the transaction's:\n%s", r)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "b.txt")); got != "b-old\n" {
		t.Errorf("b.txt = %q after the rollback, want b-old", got)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "c.txt")); got != "c-old\n" {
		t.Errorf("c.txt = %q: the partial commit touched a path it did not name", got)
	}
	saved, _ := filepath.Glob(filepath.Join(x.state, "tx", "mid", "displaced-*"))
	if len(saved) != 1 {
		t.Errorf("the person's save is not kept in the transaction (%v)", saved)
	}
	if _, err := os.Lstat(filepath.Join(x.state, "tx", "mid.1")); err == nil {
		t.Errorf("a refused part was left behind as mid.1")
	}
	r = x.airlock("commit", "mid", "--", "a.txt", "b.txt")
	wantCode(t, r, 0)
	if r.Settle["tx"] != "mid.1" {
		t.Fatalf("want the part mid.1 to land:\n%s", r)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "b.txt")); got != "b-new\n" {
		t.Errorf("b.txt = %q, want b-new", got)
	}
	if got, want := nameStatus(t, x, "mid"), "M\tc.txt\n"; got != want {
		t.Errorf("diff after the partial commit:\n%s\nwant the rest:\n%s", got, want)
	}
}

// After a partial commit, the rest of the transaction stays exact: the
// agent writes a landed path again (a change again, against what landed),
// discard drops only the rest (the landed part stays in the base), and the
// base's own later edit of a landed path is no change of the transaction.
func TestE2EPartialCommitRestStaysExact(t *testing.T) {
	x := newH(t)
	staged := partialTx(t, x, "rest")
	wantCode(t, x.airlock("commit", "rest", "--", "a.txt"), 0)
	// The base edits the landed path: not the transaction's change.
	writeFile(t, filepath.Join(x.base, "a.txt"), "a-human\n")
	if got, want := nameStatus(t, x, "rest"), "M\tb.txt\nM\tc.txt\n"; got != want {
		t.Errorf("diff after the base edited a landed path:\n%s\nwant:\n%s", got, want)
	}
	// The agent writes it again: a change again, which a commit lands
	// over the base's edit only by merging it.
	writeFile(t, filepath.Join(staged, "b.txt"), "b-newer\n")
	r := x.airlock("commit", "rest", "--", "b.txt")
	wantCode(t, r, 0)
	if r.Settle["tx"] != "rest.2" {
		t.Fatalf("the second part is not rest.2:\n%s", r)
	}
	wantFiles(t, x, "a-human\n", "b-newer\n", "c-old\n")
	r = x.airlock("discard", "rest")
	wantCode(t, r, 0)
	wantFiles(t, x, "a-human\n", "b-newer\n", "c-old\n")
	lg := x.airlock("log", "--workdir", x.base)
	wantCode(t, lg, 0)
	for _, want := range []string{"rest.1  +0 ~1 -0", "(part of rest: \"a.txt\")", "rest.2  +0 ~1 -0", "(part of rest: \"b.txt\")"} {
		if !strings.Contains(lg.Stdout, want) {
			t.Errorf("log does not show %q:\n%s", want, lg.Stdout)
		}
	}
}

// Killed after the part's receipt, before the transaction recorded the
// landing (the one window reference.md names): recover finds the part
// committed and records the landing in the transaction from the part's
// state, so the transaction lists only the rest, and committing it lands
// b.txt and c.txt without touching a.txt again (no merge of it).
func TestE2EPartialCommitKilledBeforeTheAdvance(t *testing.T) {
	x := newH(t)
	partialTx(t, x, "kill")
	r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=recorded"}, "commit", "kill", "--", "a.txt")
	if r.Code != -1 {
		t.Fatalf("the fault point did not kill airlock: %v", r)
	}
	wantCode(t, x.airlock("recover", "--workdir", x.base), 0)
	wantFiles(t, x, "a-new\n", "b-old\n", "c-old\n")
	show := x.airlock("show", "kill.1")
	if !strings.Contains(show.Stdout, "status:    committed") {
		t.Fatalf("the part is not committed after recover:\n%s", show.Stdout)
	}
	if got, w := nameStatus(t, x, "kill"), "M\tb.txt\nM\tc.txt\n"; got != w {
		t.Errorf("the rest after recover:\n%s\nwant:\n%s", got, w)
	}
	r = x.airlock("commit", "kill")
	wantCode(t, r, 0)
	if r.Settle["merged_paths"] != "" {
		t.Errorf("the rest's commit merged a path it does not change:\n%s", r)
	}
	wantFiles(t, x, "a-new\n", "b-new\n", "c-new\n")
}

// A selected path the base changed too is three-way merged, as in any
// commit; the transaction's rest does not list it (its staged file is
// still the command's, the base holds the merge), and committing the rest
// keeps the merge.
func TestE2EPartialCommitMergedPathStaysMerged(t *testing.T) {
	x := newH(t)
	// git's HEAD is the merge's ancestor.
	gitRepoBase(t, x, tree{"a.txt": F(0o644, "1\n2\n3\n4\n5\n"), "b.txt": F(0o644, "b\n")})
	staged := x.openTx("m", "--backend", "copy")
	writeFile(t, filepath.Join(staged, "a.txt"), "one\n2\n3\n4\n5\n")
	writeFile(t, filepath.Join(staged, "b.txt"), "b2\n")
	writeFile(t, filepath.Join(x.base, "a.txt"), "1\n2\n3\n4\nfive\n")
	r := x.airlock("commit", "m", "--", "a.txt")
	wantCode(t, r, 0)
	if r.Settle["merged_paths"] != "a.txt" || r.Settle["tx"] != "m.1" {
		t.Fatalf("want part m.1 with a.txt merged:\n%s", r)
	}
	const merged = "one\n2\n3\n4\nfive\n"
	if got := testbin.ReadFile(t, filepath.Join(x.base, "a.txt")); got != merged {
		t.Fatalf("a.txt = %q, want the merge %q", got, merged)
	}
	if got, want := nameStatus(t, x, "m"), "M\tb.txt\n"; got != want {
		t.Errorf("the rest after a merged part:\n%s\nwant:\n%s", got, want)
	}
	wantCode(t, x.airlock("commit", "m"), 0)
	if got := testbin.ReadFile(t, filepath.Join(x.base, "a.txt")); got != merged {
		t.Errorf("a.txt = %q after the rest landed, want the merge kept", got)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "b.txt")); got != "b2\n" {
		t.Errorf("b.txt = %q, want b2", got)
	}
}

// The agent rewrites a named path in the staged tree while the partial
// commit freezes it (paused after the first file): refused StagedChanged
// naming it, as any commit, nothing applied; once the agent has stopped,
// the same partial commit lands what the tree holds then.
func TestE2EPartialCommitRacesTheAgentsWrite(t *testing.T) {
	x := newH(t)
	staged := partialTx(t, x, "frz")
	pause := t.TempDir()
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=freeze:1:" + pause}, args: []string{"commit", "frz", "--", "a.txt", "b.txt"}})
	waitPaused(t, p, pause)
	tmp := filepath.Join(t.TempDir(), "b")
	writeFile(t, tmp, "b-newer\n")
	must(t, os.Rename(tmp, filepath.Join(staged, "b.txt")))
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	wantCode(t, r, 75)
	if r.Settle["tx"] != "frz" || r.Settle["refusal"] != "StagedChanged" || r.Settle["refused_paths"] != "b.txt" {
		t.Fatalf("want the transaction refused StagedChanged naming b.txt:\n%s", r)
	}
	wantFiles(t, x, "a-old\n", "b-old\n", "c-old\n")
	if _, err := os.Lstat(filepath.Join(x.state, "tx", "frz.1")); err == nil {
		t.Errorf("a refused part was left behind as frz.1")
	}
	r = x.airlock("commit", "frz", "--", "a.txt", "b.txt")
	wantCode(t, r, 0)
	wantFiles(t, x, "a-new\n", "b-newer\n", "c-old\n")
}

// Two partial commits of one transaction at once: the second waits for
// the first (the transaction's lock), then takes its part of what is left;
// each is a part of its own, and the rest is what neither named.
func TestE2EPartialCommitsAtOnce(t *testing.T) {
	x := newH(t)
	partialTx(t, x, "two")
	pause := t.TempDir()
	first := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", "two", "--", "a.txt"}})
	waitPaused(t, first, pause)
	second := x.start(run{args: []string{"commit", "two", "--", "b.txt"}})
	touch(t, filepath.Join(pause, "continue"))
	r1, r2 := first.WaitSettled(), second.WaitSettled()
	wantCode(t, r1, 0)
	wantCode(t, r2, 0)
	if r1.Settle["tx"] != "two.1" || r1.Settle["paths"] != "a.txt" || r2.Settle["tx"] != "two.2" || r2.Settle["paths"] != "b.txt" {
		t.Fatalf("want two.1 landing a.txt, then two.2 landing b.txt:\n%s\n%s", r1, r2)
	}
	wantFiles(t, x, "a-new\n", "b-new\n", "c-old\n")
	if got, want := nameStatus(t, x, "two"), "M\tc.txt\n"; got != want {
		t.Errorf("the rest:\n%s\nwant:\n%s", got, want)
	}
}
