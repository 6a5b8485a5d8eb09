package main_test

import (
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/testbin"
)

// An outside review of batch landing into a git remote (attack10): each
// test attacks one guarantee of docs/landing.md's "Batches" from outside,
// as a user or a hostile same-user process would, and holds it.

// landArgs is `land --remote origin --branch main --validate v ids...`.
func landArgs(v string, ids ...string) []string {
	return append([]string{"land", "-q", "--remote", "origin", "--branch", "main", "--validate", v}, ids...)
}

// passRecorder is a --validate command that runs check in the candidate
// and, only when it passes, appends the candidate's tree (hashed by git)
// to passed: the set of trees the validators passed.
func passRecorder(check, passed string) string {
	return fmt.Sprintf(`%s && git init -q . && git add -A . && git write-tree >> %s`, check, passed)
}

func linesOf(t *testing.T, path string) []string {
	t.Helper()
	if !testbin.Exists(path) {
		return nil
	}
	return strings.Split(strings.TrimSpace(testbin.ReadFile(t, path)), "\n")
}

// tipsPassed checks that every tree the branch's tip held after a push
// (main's reflog on the server) is a tree the validators passed.
func tipsPassed(t *testing.T, bare, passed string) {
	t.Helper()
	ok := linesOf(t, passed)
	for _, c := range strings.Split(gitIn(t, bare, "reflog", "show", "--format=%H", "refs/heads/main", "--"), "\n") {
		if c == "" {
			continue
		}
		tree := gitIn(t, bare, "rev-parse", c+"^{tree}")
		if !slices.Contains(ok, tree) {
			t.Errorf("main's tip %s holds tree %s, which no validator passed (passed: %v)", c, tree, ok)
		}
	}
}

// A batch SIGKILLed right after its atomic push, before anything is
// recorded locally: the branch holds the batch once; the same land again
// pushes nothing, says `already` for each with its commit, records each
// committed; the notes chain verifies. Killed just before the push,
// nothing moved and a re-run lands them all.
func TestE2EAttack10KilledAroundTheBatchPushLandsOnce(t *testing.T) {
	for _, point := range []string{"land-remote:pushed", "land-remote:built"} {
		t.Run(strings.ReplaceAll(point, ":", "-"), func(t *testing.T) {
			_, bare, hst := batchRemote(t, "k.git", map[string]string{"a.txt": "a\n"})
			runs := filepath.Join(testbin.RealDir(t), "runs")
			ids := []string{
				hst.open(map[string]string{"x.txt": "x\n"}),
				hst.open(map[string]string{"y.txt": "y\n"}),
				hst.open(map[string]string{"z.txt": "z\n"}),
			}
			r := hst.run([]string{"AIRLOCK_TEST_FAULT=" + point}, landArgs(counter(runs), ids...)...)
			if r.Code != -1 {
				t.Fatalf("land killed at %s: want a SIGKILL\n%s", point, r)
			}
			before := pushesTo(t, bare, "refs/heads/main")
			again := hst.run(nil, landArgs(counter(runs), ids...)...)
			if again.Code != 0 {
				t.Fatalf("land again after a kill at %s:\n%s", point, again)
			}
			on := landed(t, bare, "main")
			for _, id := range ids {
				if len(on[id]) != 1 {
					t.Errorf("%s is on main %d times, want once: %v", id, len(on[id]), on)
				}
				if s := statusOf(t, hst, id); s != "committed" {
					t.Errorf("%s is %s after the re-run, want committed", id, s)
				}
				word := "landed   "
				if point == "land-remote:pushed" {
					word = "already  "
				}
				if len(on[id]) == 1 && !strings.Contains(again.Stdout, word+id+"  "+on[id][0]) {
					t.Errorf("the re-run does not say %q for %s at %s\n%s", strings.TrimSpace(word), id, on[id][0], again)
				}
			}
			if p := pushesTo(t, bare, "refs/heads/main"); p != 1 {
				t.Errorf("main moved %d times (%d before the re-run), want one push in all", p, before)
			}
			v := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
			if v.Code != 0 || !strings.Contains(v.Stdout, "receipts=3") {
				t.Errorf("receipt verify --remote after the kill and the re-run:\n%s", v)
			}
		})
	}
}

// The culprit's removal changes what the rest mean: the third
// transaction passes only beside the second (the culprit), so once the
// culprit is taken out, the third, built again without it, must fail
// too, and never land on a tree nobody validated. Every tree the branch
// tip held is one the validator passed.
func TestE2EAttack10RestWithoutTheCulpritIsValidatedAgain(t *testing.T) {
	_, bare, hst := batchRemote(t, "v.git", map[string]string{"a.txt": "a\n"})
	passed := filepath.Join(testbin.RealDir(t), "passed")
	one := hst.open(map[string]string{"one.txt": "1\n"})
	culprit := hst.open(map[string]string{"two.txt": "2\n", "bad.txt": "bad\n"})
	needsTwo := hst.open(map[string]string{"three.txt": "3\n"})
	check := `test ! -e bad.txt && { test ! -e three.txt || test -e two.txt; }`
	r := hst.run(nil, landArgs(passRecorder(check, passed), one, culprit, needsTwo)...)
	if r.Code != 75 {
		t.Fatalf("want exit 75 (refusals)\n%s", r)
	}
	for _, id := range []string{culprit, needsTwo} {
		if !strings.Contains(r.Stdout, "refused  "+id+"  refused (ValidationFailed)") {
			t.Errorf("%s not refused ValidationFailed\n%s", id, r)
		}
		if s := statusOf(t, hst, id); s != "refused" {
			t.Errorf("%s is %s, want kept refused", id, s)
		}
	}
	on := landed(t, bare, "main")
	if len(on[one]) != 1 || len(on[culprit]) != 0 || len(on[needsTwo]) != 0 {
		t.Errorf("main holds %v, want only %s", on, one)
	}
	tipsPassed(t, bare, passed)
}

// A flaky validator (fails its first run, passes after) or one that
// depends on the order the batch was built in may blame the wrong
// transaction, as documented; it never lands a tree it did not pass.
func TestE2EAttack10FlakyValidatorNeverLandsAnUnvalidatedTree(t *testing.T) {
	_, bare, hst := batchRemote(t, "f.git", map[string]string{"a.txt": "a\n"})
	dir := testbin.RealDir(t)
	passed, flaked := filepath.Join(dir, "passed"), filepath.Join(dir, "flaked")
	var ids []string
	for k := 0; k < 5; k++ {
		ids = append(ids, hst.open(map[string]string{fmt.Sprintf("f%d.txt", k): fmt.Sprintf("%d\n", k)}))
	}
	// Fails exactly once, on its first run: the whole batch's tip.
	check := fmt.Sprintf(`if test -e %s; then true; else touch %s; false; fi`, flaked, flaked)
	r := hst.run(nil, landArgs(passRecorder(check, passed), ids...)...)
	if r.Code != 0 && r.Code != 75 {
		t.Fatalf("land with a flaky validator:\n%s", r)
	}
	tipsPassed(t, bare, passed)
	on := landed(t, bare, "main")
	for _, id := range ids {
		s := statusOf(t, hst, id)
		if (s == "committed") != (len(on[id]) == 1) || len(on[id]) > 1 {
			t.Errorf("%s is %s locally and on main %d times", id, s, len(on[id]))
		}
		if s != "committed" && s != "refused" {
			t.Errorf("%s is %s: neither landed nor kept refused", id, s)
		}
	}
}

// Each landed commit of a batch holds exactly its own transaction's
// change set on its parent (an add, a modify, a delete), none of
// another's, also when a transaction between them was refused for an
// overlap and another as the culprit.
func TestE2EAttack10EachBatchCommitHoldsOnlyItsChange(t *testing.T) {
	shared := sharedFile(4)
	_, bare, hst := batchRemote(t, "d.git", map[string]string{"shared.txt": shared, "gone.txt": "g\n", "keep.txt": "k\n"})
	add := hst.open(map[string]string{"add.txt": "add\n", "shared.txt": editLine(shared, 1, "by add")})
	overlap := hst.open(map[string]string{"shared.txt": editLine(shared, 1, "by overlap")})
	culprit := hst.open(map[string]string{"bad.txt": "bad\n", "shared.txt": editLine(shared, 5, "by culprit")})
	mod := hst.open(map[string]string{"keep.txt": "changed\n", "shared.txt": editLine(shared, 3, "by mod")})
	del := hst.open(nil)
	if err := os.Remove(filepath.Join(hst.stagedPath(del), "gone.txt")); err != nil {
		t.Fatal(err)
	}
	r := hst.run(nil, landArgs("test ! -e bad.txt", add, overlap, culprit, mod, del)...)
	if r.Code != 75 {
		t.Fatalf("want exit 75\n%s", r)
	}
	want := map[string]string{
		add: "A\tadd.txt\nM\tshared.txt",
		mod: "M\tkeep.txt\nM\tshared.txt",
		del: "D\tgone.txt",
	}
	on := landed(t, bare, "main")
	for id, diff := range want {
		if len(on[id]) != 1 {
			t.Errorf("%s is on main %d times, want once", id, len(on[id]))
			continue
		}
		c := on[id][0]
		if got := gitIn(t, bare, "diff-tree", "-r", "--name-status", "--no-commit-id", c+"^", c); got != diff {
			t.Errorf("commit %s of %s changes\n%s\nwant exactly\n%s", c, id, got, diff)
		}
		if n := noteOf(t, bare, c); n.Tx != id || n.LandedCommit != c {
			t.Errorf("commit %s's note is tx %s landed_commit %s", c, n.Tx, n.LandedCommit)
		}
	}
	for _, id := range []string{overlap, culprit} {
		if len(on[id]) != 0 {
			t.Errorf("refused %s is on main", id)
		}
	}
	if got := gitIn(t, bare, "show", "main:shared.txt"); strings.Contains(got, "by overlap") || strings.Contains(got, "by culprit") {
		t.Errorf("a refused transaction's edit leaked into main's shared.txt:\n%s", got)
	}
	// The culprit's change set is intact: it lands once the bad file is gone.
	if err := os.Remove(filepath.Join(hst.stagedPath(culprit), "bad.txt")); err != nil {
		t.Fatal(err)
	}
	if r := hst.run(nil, landArgs("test ! -e bad.txt", culprit)...); r.Code != 0 {
		t.Fatalf("land the fixed culprit:\n%s", r)
	}
	if got := gitIn(t, bare, "show", "main:shared.txt"); !strings.Contains(got, "by culprit") {
		t.Errorf("the culprit's kept edit did not land:\n%s", got)
	}
}

// Refusals are per transaction: in one batch an unknown id fails naming
// it, an id landed before says already, a protected path without
// --approve is refused ProtectedPathNotApproved and kept, and the rest
// land in one push. An id given twice lands once.
func TestE2EAttack10BatchRefusalsArePerTransaction(t *testing.T) {
	_, bare, hst := batchRemote(t, "p.git", map[string]string{"a.txt": "a\n"})
	runs := filepath.Join(testbin.RealDir(t), "runs")
	earlier := hst.open(map[string]string{"earlier.txt": "e\n"})
	if r := hst.run(nil, landArgs("true", earlier)...); r.Code != 0 {
		t.Fatalf("land the earlier one: %s", r)
	}
	ok := hst.open(map[string]string{"ok.txt": "ok\n"})
	prot := hst.open(map[string]string{".github/workflows/ci.yml": "on: push\n"})
	ok2 := hst.open(map[string]string{"ok2.txt": "ok2\n"})
	const bogus = "nosuchtx0000"
	before := pushesTo(t, bare, "refs/heads/main")
	r := hst.run(nil, landArgs(counter(runs), ok, prot, bogus, earlier, ok2)...)
	if r.Code == 0 {
		t.Errorf("a batch with a refusal and an unknown id exited 0\n%s", r)
	}
	if !strings.Contains(r.Stdout, "refused  "+prot+"  refused (ProtectedPathNotApproved)") {
		t.Errorf("the protected change is not refused ProtectedPathNotApproved\n%s", r)
	}
	if !strings.Contains(r.Stdout+r.Stderr, bogus) || strings.Contains(r.Stdout, "landed   "+bogus) {
		t.Errorf("the unknown id %s is not named as failed\n%s", bogus, r)
	}
	if !strings.Contains(r.Stdout, "already  "+earlier) {
		t.Errorf("the id landed before does not say already\n%s", r)
	}
	on := landed(t, bare, "main")
	if len(on[ok]) != 1 || len(on[ok2]) != 1 || len(on[prot]) != 0 || len(on[earlier]) != 1 {
		t.Errorf("main holds %v: want %s and %s once each, %s once from before, not %s", on, ok, ok2, earlier, prot)
	}
	if p := pushesTo(t, bare, "refs/heads/main") - before; p != 1 {
		t.Errorf("the batch moved main %d times, want one push", p)
	}
	if got := lineCount(t, runs); got != 1 {
		t.Errorf("the validator ran %d times, want once", got)
	}
	if s := statusOf(t, hst, prot); s != "refused" {
		t.Errorf("the protected transaction is %s, want kept refused", s)
	}

	twice := hst.open(map[string]string{"twice.txt": "t\n"})
	other := hst.open(map[string]string{"other.txt": "o\n"})
	r = hst.run(nil, landArgs("true", twice, other, twice)...)
	on = landed(t, bare, "main")
	if len(on[twice]) != 1 || len(on[other]) != 1 {
		t.Errorf("an id given twice: main holds %v, want %s and %s once each\n%s", on, twice, other, r)
	}
}

// A batch's chain of receipts is verified link by link: notes swapped
// between two commits of one batch, or a batch_tree changed, make
// `receipt verify --remote` fail naming a commit of the batch, and
// `log --remote` say the chain is broken.
func TestE2EAttack10TamperedBatchNotesAreCaught(t *testing.T) {
	_, bare, hst := batchRemote(t, "t.git", map[string]string{"a.txt": "a\n"})
	var ids []string
	for k := 0; k < 3; k++ {
		ids = append(ids, hst.open(map[string]string{fmt.Sprintf("f%d.txt", k): "x\n"}))
	}
	if r := hst.run(nil, landArgs("true", ids...)...); r.Code != 0 {
		t.Fatalf("land the batch: %s", r)
	}
	commits := firstParents(t, bare)
	if len(commits) != 3 {
		t.Fatalf("main has %v since the seed", commits)
	}
	good := gitIn(t, bare, "rev-parse", "refs/notes/airlock")
	notes := make([]string, 3)
	for i, c := range commits {
		notes[i] = gitIn(t, bare, "notes", "--ref=airlock", "show", c)
	}
	setNotes := func(t *testing.T, m map[string]string) {
		t.Helper()
		work := testbin.RealDir(t)
		gitIn(t, work, "clone", "-q", "--bare", bare, "tamper.git")
		tdir := filepath.Join(work, "tamper.git")
		gitIn(t, tdir, "fetch", "-q", bare, "+refs/notes/airlock:refs/notes/airlock")
		for c, body := range m {
			cmd := exec.Command("git", "notes", "--ref=airlock", "add", "-f", "-F", "-", c)
			cmd.Dir, cmd.Env, cmd.Stdin = tdir, gitEnv(), strings.NewReader(body)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("rewrite the note of %s: %v\n%s", c, err, out)
			}
		}
		gitIn(t, tdir, "push", "-q", "-f", bare, "refs/notes/airlock:refs/notes/airlock")
	}
	tip := gitIn(t, bare, "rev-parse", "main^{tree}")
	other := gitIn(t, bare, "rev-parse", commits[0]+"^{tree}")
	cases := map[string]map[string]string{
		"swapped":    {commits[0]: notes[1], commits[1]: notes[0]},
		"batch_tree": {commits[1]: strings.Replace(notes[1], tip, other, 1)},
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			for c, body := range m {
				if name == "batch_tree" && body == notes[1] {
					t.Fatalf("the note of %s names no batch_tree %s:\n%s", c, tip, notes[1])
				}
			}
			setNotes(t, m)
			v := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
			if v.Code != 1 || !(strings.Contains(v.Stderr, commits[0]) || strings.Contains(v.Stderr, commits[1])) {
				t.Errorf("receipt verify --remote after %s: want exit 1 naming a tampered commit\n%s", name, v)
			}
			lg := hst.run(nil, "log", "--remote", "origin", "--branch", "main", "--json")
			if !strings.Contains(lg.Stdout, `"broken"`) || strings.Contains(lg.Stdout, `"broken": ""`) {
				t.Errorf("log --remote after %s does not say the chain is broken\n%s", name, lg)
			}
			gitIn(t, bare, "update-ref", "refs/notes/airlock", good)
		})
	}
}

// Two lands over overlapping sets of transactions, one paused holding
// its locks right before its push while the other starts: neither
// deadlocks, and every transaction lands exactly once.
func TestE2EAttack10RacingLandsOverOverlappingIDsLandEachOnce(t *testing.T) {
	_, bare, hst := batchRemote(t, "o.git", map[string]string{"a.txt": "a\n"})
	a := hst.open(map[string]string{"a1.txt": "a\n"})
	b := hst.open(map[string]string{"b1.txt": "b\n"})
	c := hst.open(map[string]string{"c1.txt": "c\n"})
	pause := testbin.RealDir(t)
	p1 := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: 2 * time.Minute,
		Args: landArgs("true", a, b), Env: hst.environ("AIRLOCK_TEST_PAUSE=land-remote:built:" + pause)})
	waitFile(t, filepath.Join(pause, "reached"))
	p2 := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: 2 * time.Minute,
		Args: landArgs("true", c, b), Env: hst.environ()})
	touch(t, filepath.Join(pause, "continue"))
	r1, r2 := p1.Wait(), p2.Wait()
	if r1.Code == -2 || r2.Code == -2 {
		t.Fatalf("a land timed out (deadlock?)\n%s\n%s", r1, r2)
	}
	on := landed(t, bare, "main")
	for _, id := range []string{a, b, c} {
		if len(on[id]) != 1 {
			t.Errorf("%s is on main %d times, want once\n%s\n%s", id, len(on[id]), r1, r2)
		}
		if s := statusOf(t, hst, id); s != "committed" {
			t.Errorf("%s is %s, want committed", id, s)
		}
	}
	if r1.Code != 0 || r2.Code != 0 {
		t.Errorf("racing lands: want both exit 0 (each landed or already)\n%s\n%s", r1, r2)
	}
}

// Bisection's validator runs stay within 2 + ceil(log2 n) wherever the
// one culprit sits, the first and last places included.
func TestE2EAttack10BisectWithinItsBound(t *testing.T) {
	for _, tc := range []struct{ n, bad int }{{2, 0}, {2, 1}, {8, 0}, {8, 7}, {7, 3}} {
		t.Run(fmt.Sprintf("n%d-bad%d", tc.n, tc.bad), func(t *testing.T) {
			_, bare, hst := batchRemote(t, "b.git", map[string]string{"a.txt": "a\n"})
			runs := filepath.Join(testbin.RealDir(t), "runs")
			var ids []string
			for k := 0; k < tc.n; k++ {
				files := map[string]string{fmt.Sprintf("f%d.txt", k): "x\n"}
				if k == tc.bad {
					files["bad.txt"] = "bad\n"
				}
				ids = append(ids, hst.open(files))
			}
			r := hst.run(nil, landArgs(counter(runs), ids...)...)
			if r.Code != 75 || !strings.Contains(r.Stdout, "refused  "+ids[tc.bad]+"  refused (ValidationFailed)") {
				t.Fatalf("want the culprit refused ValidationFailed\n%s", r)
			}
			bound := 2 + bits.Len(uint(tc.n-1))
			if tc.bad == 0 {
				bound++ // the head, validated once to tell it from the first
			}
			if got := lineCount(t, runs); got > bound {
				t.Errorf("the validator ran %d times for one culprit in %d, bound %d", got, tc.n, bound)
			}
			if got := len(firstParents(t, bare)); got != tc.n-1 {
				t.Errorf("main has %d commits since the seed, want %d", got, tc.n-1)
			}
		})
	}
}

// roundTwoValidator counts its runs in runs; on run stopAt it writes its
// pid to dir/pid, touches dir/validating and sleeps (a handshake for a
// signal); otherwise it fails on a candidate holding bad.txt.
func roundTwoValidator(runs, dir string, stopAt int) string {
	return fmt.Sprintf(`echo x >> %[1]s; if [ "$(wc -l < %[1]s)" -eq %[3]d ]; then echo $$ > %[2]s/pid; touch %[2]s/validating; exec sleep 60; fi; test ! -e bad.txt`, runs, dir, stopAt)
}

// A signal while the rest of a bisected batch is validated again, after
// the prefix before the culprit was pushed: the prefix is landed and
// recorded, the culprit refused and kept, the rest kept open with its
// change set; a SIGINT exits 130. After a SIGKILL there, a re-run says
// `already` for the prefix, refuses the culprit again and lands the rest
// once.
func TestE2EAttack10SignalWhileTheRestRevalidatesLosesNothing(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			_, bare, hst := batchRemote(t, "i.git", map[string]string{"a.txt": "a\n"})
			dir := testbin.RealDir(t)
			runs := filepath.Join(dir, "runs")
			first := hst.open(map[string]string{"first.txt": "1\n"})
			culprit := hst.open(map[string]string{"bad.txt": "bad\n"})
			rest := hst.open(map[string]string{"rest.txt": "r\n"})
			ids := []string{first, culprit, rest}
			// Runs: the tip (fails), prefix 1 (passes), prefix 2 (fails):
			// the culprit; the 4th validates the rest on what landed.
			p := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: time.Minute, Setsid: true,
				Args: landArgs(roundTwoValidator(runs, dir, 4), ids...), Env: hst.environ()})
			waitFile(t, filepath.Join(dir, "validating"))
			if err := p.Signal(sig); err != nil {
				t.Fatal(err)
			}
			r := p.Wait()
			if pid, err := strconv.Atoi(strings.TrimSpace(testbin.ReadFile(t, filepath.Join(dir, "pid")))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			if sig == syscall.SIGINT && (r.Code != 130 || !strings.Contains(r.Stdout, "stopped  "+rest)) {
				t.Errorf("SIGINT while the rest validates: want exit 130, the rest stopped\n%s", r)
			}
			on := landed(t, bare, "main")
			if len(on[first]) != 1 || len(on[culprit]) != 0 || len(on[rest]) != 0 {
				t.Fatalf("main holds %v after the signal: want only %s\n%s", on, first, r)
			}
			if s := statusOf(t, hst, first); s != "committed" {
				t.Errorf("the landed prefix %s is %s, want committed", first, s)
			}
			if s := statusOf(t, hst, culprit); s != "refused" {
				t.Errorf("the culprit is %s, want refused", s)
			}
			if s := statusOf(t, hst, rest); s != "open" {
				t.Errorf("the rest is %s, want kept open", s)
			}
			if !testbin.Exists(filepath.Join(hst.stagedPath(rest), "rest.txt")) {
				t.Errorf("the rest's change set is gone")
			}
			again := hst.run(nil, landArgs("test ! -e bad.txt", ids...)...)
			if again.Code != 75 || !strings.Contains(again.Stdout, "already  "+first) ||
				!strings.Contains(again.Stdout, "refused  "+culprit+"  refused (ValidationFailed)") ||
				!strings.Contains(again.Stdout, "landed   "+rest) {
				t.Errorf("the re-run: want the prefix already, the culprit refused, the rest landed\n%s", again)
			}
			on = landed(t, bare, "main")
			if len(on[first]) != 1 || len(on[rest]) != 1 || len(on[culprit]) != 0 {
				t.Errorf("main holds %v after the re-run", on)
			}
		})
	}
}

// A transaction refused MergeConflict while building only because it
// overlaps the culprit is tried again without it, and lands: a
// MergeConflict is only ever against what lands.
func TestE2EAttack10OverlapWithTheCulpritIsNoConflict(t *testing.T) {
	_, bare, hst := batchRemote(t, "m.git", map[string]string{"conflict.txt": "one\ntwo\nthree\n"})
	ok := hst.open(map[string]string{"ok.txt": "ok\n"})
	culprit := hst.open(map[string]string{"bad.txt": "bad\n", "conflict.txt": "one\nculprit\nthree\n"})
	after := hst.open(map[string]string{"conflict.txt": "one\nafter\nthree\n"})
	r := hst.run(nil, landArgs("test ! -e bad.txt", ok, culprit, after)...)
	if r.Code != 75 || strings.Contains(r.Stdout, "refused  "+after) {
		t.Fatalf("want only the culprit refused\n%s", r)
	}
	on := landed(t, bare, "main")
	if len(on[ok]) != 1 || len(on[after]) != 1 || len(on[culprit]) != 0 {
		t.Errorf("main holds %v: want %s and %s", on, ok, after)
	}
	if got := gitIn(t, bare, "show", "main:conflict.txt"); got != "one\nafter\nthree" {
		t.Errorf("conflict.txt on main = %q", got)
	}
}

// Another host pushes while the rest of a bisected batch is validated
// again, a change with which the rest fails: the rest's push finds the
// branch moved, the round starts over on the racer's commit, and the
// rest is refused ValidationFailed there, never landed on a tree the
// validator did not pass.
func TestE2EAttack10BaseMovedBetweenRoundsIsValidated(t *testing.T) {
	_, bare, hst := batchRemote(t, "mv.git", map[string]string{"a.txt": "a\n"})
	pusher := newRemoteHost(t, bare)
	dir := testbin.RealDir(t)
	runs, passed := filepath.Join(dir, "runs"), filepath.Join(dir, "passed")
	first := hst.open(map[string]string{"first.txt": "1\n"})
	culprit := hst.open(map[string]string{"bad.txt": "bad\n"})
	rest := hst.open(map[string]string{"rest.txt": "r\n"})
	// The 4th run validates the rest on what landed: it says so and
	// waits for the test's go; rest.txt beside racer.txt fails.
	v := fmt.Sprintf(`echo x >> %[1]s; if [ "$(wc -l < %[1]s)" -eq 4 ]; then touch %[2]s/validating; while [ ! -e %[2]s/go ]; do sleep 0.05; done; fi; `, runs, dir) +
		passRecorder(`test ! -e bad.txt && { test ! -e racer.txt || test ! -e rest.txt; }`, passed)
	p := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: time.Minute,
		Args: landArgs(v, first, culprit, rest), Env: hst.environ("AIRLOCK_TEST_JITTER=0.5")})
	waitFile(t, filepath.Join(dir, "validating"))
	gitIn(t, pusher.clone, "pull", "-q", "origin", "main")
	testbin.WriteFiles(t, pusher.clone, map[string]string{"racer.txt": "racer\n"})
	gitIn(t, pusher.clone, "add", "-A")
	gitIn(t, pusher.clone, "-c", "user.name=r", "-c", "user.email=r@r", "commit", "-q", "-m", "racer")
	gitIn(t, pusher.clone, "push", "-q", "origin", "HEAD:main")
	racer := gitIn(t, pusher.clone, "rev-parse", "HEAD")
	touch(t, filepath.Join(dir, "go"))
	r := p.Wait()
	if r.Code != 75 || !strings.Contains(r.Stdout, "refused  "+rest+"  refused (ValidationFailed)") {
		t.Errorf("the rest, on a branch that moved to a change it fails with: want refused ValidationFailed\n%s", r)
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != racer {
		t.Errorf("main is %s, want the racer's %s with nothing on top", h, racer)
	}
	on := landed(t, bare, "main")
	if len(on[first]) != 1 || len(on[rest]) != 0 || len(on[culprit]) != 0 {
		t.Errorf("main holds %v, want only %s", on, first)
	}
	if s := statusOf(t, hst, rest); s != "refused" {
		t.Errorf("the rest is %s, want kept refused", s)
	}
}

// A land SIGKILLed right after its push while a second land over an
// overlapping set waits for the shared transaction: the second says
// already for it (its note proves it), lands its own, and a third run
// records the killed land's other transaction as already: each lands
// once.
func TestE2EAttack10KilledAfterPushWhileAnotherWaits(t *testing.T) {
	_, bare, hst := batchRemote(t, "kw.git", map[string]string{"a.txt": "a\n"})
	a := hst.open(map[string]string{"a1.txt": "a\n"})
	b := hst.open(map[string]string{"b1.txt": "b\n"})
	c := hst.open(map[string]string{"c1.txt": "c\n"})
	pause := testbin.RealDir(t)
	p1 := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: time.Minute,
		Args: landArgs("true", a, b), Env: hst.environ("AIRLOCK_TEST_PAUSE=land-remote:pushed:" + pause)})
	waitFile(t, filepath.Join(pause, "reached"))
	p2 := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: time.Minute,
		Args: landArgs("true", b, c), Env: hst.environ()})
	if err := p1.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p1.Wait()
	r2 := p2.Wait()
	if r2.Code != 0 || !strings.Contains(r2.Stdout, "already  "+b) || !strings.Contains(r2.Stdout, "landed   "+c) {
		t.Errorf("the second land: want %s already and %s landed\n%s", b, c, r2)
	}
	r3 := hst.run(nil, landArgs("true", a)...)
	if r3.Code != 0 || !strings.Contains(r3.Stdout, "already  "+a) {
		t.Errorf("the killed land's other transaction: want already\n%s", r3)
	}
	on := landed(t, bare, "main")
	for _, id := range []string{a, b, c} {
		if len(on[id]) != 1 {
			t.Errorf("%s is on main %d times, want once", id, len(on[id]))
		}
		if s := statusOf(t, hst, id); s != "committed" {
			t.Errorf("%s is %s, want committed", id, s)
		}
	}
}

// Another host lands into another branch of the same remote while a
// batch waits to push: its receipt note moves refs/notes/airlock, the
// batch's lease on the notes fails, and the batch starts over on the new
// notes head: both branches' receipt chains verify, no note is lost.
func TestE2EAttack10NotesMovedByAnotherBranchKeepsBothChains(t *testing.T) {
	_, bare, hst := batchRemote(t, "n.git", map[string]string{"a.txt": "a\n"})
	gitIn(t, bare, "branch", "other", "main")
	racer := newRemoteHost(t, bare)
	theirs := racer.open(map[string]string{"theirs.txt": "t\n"})
	ids := []string{hst.open(map[string]string{"x.txt": "x\n"}), hst.open(map[string]string{"y.txt": "y\n"})}
	pause := testbin.RealDir(t)
	p := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: time.Minute,
		Args: landArgs("true", ids...), Env: hst.environ("AIRLOCK_TEST_PAUSE=land-remote:built:"+pause, "AIRLOCK_TEST_JITTER=0")})
	waitFile(t, filepath.Join(pause, "reached"))
	if r := racer.run(nil, "land", "-q", "--remote", "origin", "--branch", "other", "--validate", "true", theirs); r.Code != 0 {
		t.Fatalf("the other host's landing into other: %s", r)
	}
	touch(t, filepath.Join(pause, "continue"))
	r := p.Wait()
	if r.Code != 0 || strings.Count(r.Stdout, "attempts=2") != 2 {
		t.Errorf("the batch whose notes lease lost: want both landed on attempt 2\n%s", r)
	}
	for branch, n := range map[string]string{"main": "receipts=2", "other": "receipts=1"} {
		v := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", branch)
		if v.Code != 0 || !strings.Contains(v.Stdout, n) {
			t.Errorf("receipt verify --remote on %s: want %s\n%s", branch, n, v)
		}
	}
	if on := landed(t, bare, "other"); len(on[theirs]) != 1 {
		t.Errorf("the other host's landing is not on other: %v", on)
	}
}

// Against a branch whose head already fails its validator, a batch
// refuses every transaction ValidationFailed (as landing them one at a
// time would) and pushes nothing; the validator runs are logged for the
// report.
func TestE2EAttack10BrokenHeadRefusesAllPushesNothing(t *testing.T) {
	const n = 8
	_, bare, hst := batchRemote(t, "h.git", map[string]string{"a.txt": "a\n", "bad.txt": "already broken\n"})
	runs := filepath.Join(testbin.RealDir(t), "runs")
	var ids []string
	for k := 0; k < n; k++ {
		ids = append(ids, hst.open(map[string]string{fmt.Sprintf("f%d.txt", k): "x\n"}))
	}
	head := gitIn(t, bare, "rev-parse", "main")
	r := hst.run(nil, landArgs(counter(runs), ids...)...)
	if r.Code != 75 || strings.Count(r.Stdout, "refused (ValidationFailed)") != n || strings.Count(r.Stdout, "already fails its validators") != n {
		t.Errorf("want all %d refused ValidationFailed, saying the branch already fails\n%s", n, r)
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != head {
		t.Errorf("main moved to %s", h)
	}
	// The batch, the bisection down to the first, the head once.
	if got, bound := lineCount(t, runs), 2+bits.Len(uint(n-1)); got > bound {
		t.Errorf("a broken head cost %d validator runs for %d transactions, bound %d", got, n, bound)
	}
	t.Logf("a broken head: %d validator runs for %d transactions (one at a time: %d)", lineCount(t, runs), n, n)
}

// One transaction changes what a path lives in (the directory d made a
// file, or the file d edited), a later one, opened before it, changes the
// path's shape under it (adds d/y; makes the file d a directory holding
// d/y). The later one is refused BaseDrift — in a batch, landed one after
// the other, and committed locally alike — and the earlier one's d stays
// as it made it: a landing never replaces the head's file with the
// directory its change set's path needs. (buildCandidate checked the head
// only at each changed path, absent on both sides here, never at the
// path's directories: d/y's commit deleted d under a receipt of +1 ~0 -0.)
func TestE2EAttack10ShapeChangeUnderAChangedPathIsBaseDrift(t *testing.T) {
	shapes := []struct {
		name         string
		seed         map[string]string
		first, later func(t *testing.T, staged string)
		want         string // d on the branch after the first
	}{
		{
			name: "dir-made-file-then-add-under",
			seed: map[string]string{"f.txt": "f\n", "d/x": "x\n"},
			first: func(t *testing.T, staged string) {
				if err := os.RemoveAll(filepath.Join(staged, "d")); err != nil {
					t.Fatal(err)
				}
				testbin.WriteFiles(t, staged, map[string]string{"d": "now a file\n"})
			},
			later: func(t *testing.T, staged string) {
				testbin.WriteFiles(t, staged, map[string]string{"d/y": "y\n"})
			},
			want: "now a file\n",
		},
		{
			name: "file-edited-then-made-dir",
			seed: map[string]string{"f.txt": "f\n", "d": "a file\n"},
			first: func(t *testing.T, staged string) {
				testbin.WriteFiles(t, staged, map[string]string{"d": "edited\n"})
			},
			later: func(t *testing.T, staged string) {
				if err := os.Remove(filepath.Join(staged, "d")); err != nil {
					t.Fatal(err)
				}
				testbin.WriteFiles(t, staged, map[string]string{"d/y": "y\n"})
			},
			want: "edited\n",
		},
	}
	for _, sh := range shapes {
		for _, mode := range []string{"batch", "one-after-the-other", "local"} {
			t.Run(sh.name+"/"+mode, func(t *testing.T) {
				_, bare, hst := batchRemote(t, "df.git", sh.seed)
				first := hst.open(nil)
				sh.first(t, hst.stagedPath(first))
				later := hst.open(nil)
				sh.later(t, hst.stagedPath(later))
				var out string
				switch mode {
				case "batch":
					out = hst.run(nil, landArgs("true", first, later)...).String()
				case "one-after-the-other":
					for _, id := range []string{first, later} {
						out += hst.run(nil, landArgs("true", id)...).String()
					}
				case "local":
					if r := hst.run(nil, "commit", first); r.Code != 0 {
						t.Fatalf("commit %s: %s", first, r)
					}
					r := hst.run(nil, "commit", later)
					if r.Code != 75 || !strings.Contains(r.Stderr, "BaseDrift") {
						t.Errorf("commit %s: want exit 75, BaseDrift\n%s", later, r)
					}
					if got := testbin.ReadFile(t, filepath.Join(hst.clone, "d")); got != sh.want {
						t.Errorf("the base's d holds %q after the refused commit, want %q", got, sh.want)
					}
					return
				}
				on := landed(t, bare, "main")
				if len(on[first]) != 1 {
					t.Fatalf("%s did not land:\n%s", first, out)
				}
				if len(on[later]) != 0 {
					t.Errorf("%s landed as %v over %s's d: its commit changes\n%s\n%s", later, on[later], first,
						gitIn(t, bare, "diff-tree", "-r", "--name-status", "--no-commit-id", on[later][0]+"^", on[later][0]), out)
				}
				if !strings.Contains(out, "refused  "+later+"  refused (BaseDrift)") {
					t.Errorf("%s not refused BaseDrift:\n%s", later, out)
				}
				if got := gitIn(t, bare, "show", "main:d"); got+"\n" != sh.want {
					t.Errorf("main's d holds %q, want %q", got, sh.want)
				}
			})
		}
	}
}

// A transaction landed into one remote's main, asked to land into
// another remote's main (a URL given as --remote), alone and in a batch:
// it is not reported `already` (its commit is not on that branch), and
// nothing is pushed for it; the land fails (exit 125) naming the remote
// and the commit it landed as. Asked again for the remote it landed
// into, by URL, it is `already` that commit. (landedAlready compared only
// the receipt's landed_branch with the target ref.)
func TestE2EAttack10LandedElsewhereIsNotAlready(t *testing.T) {
	srv, bareX, hst := batchRemote(t, "x.git", map[string]string{"a.txt": "a\n"})
	srv.seed(t, "y.git", map[string]string{"y.txt": "y\n"})
	second := filepath.Join(hst.base, "second")
	gitIn(t, hst.base, "clone", "-q", srv.url("y.git"), second)
	res := hst.run(nil, "open", "--workdir", second)
	if res.Code != 0 {
		t.Fatalf("open in the clone of y.git: %s", res)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	inY := lines[0]
	testbin.WriteFiles(t, lines[1], map[string]string{"two.txt": "two\n"})
	if r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", "--validate", "true", inY); r.Code != 0 {
		t.Fatalf("land into y.git: %s", r)
	}
	commitY := gitIn(t, filepath.Join(srv.root, "y.git"), "rev-parse", "main")
	fresh := hst.open(map[string]string{"fresh.txt": "f\n"})
	for name, ids := range map[string][]string{"alone": {inY}, "batch": {fresh, inY}} {
		t.Run(name, func(t *testing.T) {
			r := hst.run(nil, append([]string{"land", "-q", "--remote", srv.url("x.git"), "--branch", "main", "--validate", "true"}, ids...)...)
			if strings.Contains(r.Stdout, "already  "+inY) || r.Code != 125 {
				t.Errorf("%s, landed into y.git as %s, is not refused exit 125 when landed into x.git's main\n%s", inY, commitY, r)
			}
			for _, want := range []string{inY, "y.git", commitY, "nothing was pushed"} {
				if !strings.Contains(r.Stdout+r.Stderr, want) {
					t.Errorf("the refusal does not name %q:\n%s", want, r)
				}
			}
			has := exec.Command("git", "cat-file", "-e", commitY+"^{commit}")
			has.Dir, has.Env = bareX, gitEnv()
			if has.Run() == nil {
				t.Errorf("y.git's commit %s of %s was pushed into x.git", commitY, inY)
			}
		})
	}
	if len(landed(t, bareX, "main")[fresh]) != 1 {
		t.Errorf("%s did not land into x.git beside the refusal", fresh)
	}
	r := hst.run(nil, "land", "-q", "--remote", srv.url("y.git"), "--branch", "main", "--validate", "true", inY)
	if r.Code != 0 || !strings.Contains(r.Stdout, "already  "+inY+"  "+commitY) {
		t.Errorf("%s asked again for y.git, by URL: want already %s\n%s", inY, commitY, r)
	}
}

// A note rewritten and sealed again (the digest is documented as
// recomputable by anyone, docs/json.md) is held only by what `receipt
// verify --remote` checks against the branch itself. json.md says a batch
// receipt's batch_tree is "the tree of a commit at or after this one on
// the branch", and a receipt's added/modified/deleted are its commit's
// change: a note that says otherwise about the commit it is attached to
// must not verify: verify checks each batch_tree against the trees of
// the commits at and after its own on the first-parent line, and that
// the counts can account for every path the commit changed against its
// parent. (It checked only each note's own digest, its tx and
// landed_commit against the commit, the previous links and the tree
// binding: these re-sealed notes verified, exit 0.) An unsigned chain
// whose every note agrees with its commit is as far as it goes: a forger
// who makes a whole consistent chain is stopped by signed receipts.
func TestE2EAttack10ResealedNoteContradictingItsCommitIsCaught(t *testing.T) {
	_, bare, hst := batchRemote(t, "z.git", map[string]string{"a.txt": "a\n"})
	var ids []string
	for k := 0; k < 3; k++ {
		ids = append(ids, hst.open(map[string]string{fmt.Sprintf("f%d.txt", k): "x\n"}))
	}
	if r := hst.run(nil, landArgs("true", ids...)...); r.Code != 0 {
		t.Fatalf("land the batch: %s", r)
	}
	commits := firstParents(t, bare)
	if len(commits) != 3 {
		t.Fatalf("main has %v since the seed", commits)
	}
	good := gitIn(t, bare, "rev-parse", "refs/notes/airlock")
	seedTree := gitIn(t, bare, "rev-parse", "main~3^{tree}")
	load := func(c string) *receipt.Receipt {
		rc, err := receipt.Verify([]byte(gitIn(t, bare, "notes", "--ref=airlock", "show", c)))
		if err != nil {
			t.Fatalf("the note of %s does not verify before tampering: %v", c, err)
		}
		return rc
	}
	seal := func(rc *receipt.Receipt) string {
		data, err := rc.Seal()
		if err != nil {
			t.Fatalf("seal the forged receipt: %v", err)
		}
		return string(data)
	}
	write := func(t *testing.T, m map[string]string) {
		t.Helper()
		work := testbin.RealDir(t)
		gitIn(t, work, "clone", "-q", "--bare", bare, "tamper.git")
		tdir := filepath.Join(work, "tamper.git")
		gitIn(t, tdir, "fetch", "-q", bare, "+refs/notes/airlock:refs/notes/airlock")
		for c, body := range m {
			cmd := exec.Command("git", "notes", "--ref=airlock", "add", "-f", "-F", "-", c)
			cmd.Dir, cmd.Env, cmd.Stdin = tdir, gitEnv(), strings.NewReader(body)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("rewrite the note of %s: %v\n%s", c, err, out)
			}
		}
		gitIn(t, tdir, "push", "-q", "-f", bare, "refs/notes/airlock:refs/notes/airlock")
	}
	cases := map[string]func() map[string]string{
		// The newest receipt says the batch was validated on the seed's
		// tree, which holds none of the batch.
		"newest batch_tree": func() map[string]string {
			rc := load(commits[2])
			rc.BatchTree = seedTree
			return map[string]string{commits[2]: seal(rc)}
		},
		// The middle receipt names that tree too; the newest is linked to
		// it again, so the chain holds.
		"middle batch_tree relinked": func() map[string]string {
			mid := load(commits[1])
			mid.BatchTree = seedTree
			midData := seal(mid)
			top := load(commits[2])
			top.Previous = mid.Digest
			return map[string]string{commits[1]: midData, commits[2]: seal(top)}
		},
		// The newest receipt's counts say 5 files were modified; its commit
		// adds one file.
		"newest counts": func() map[string]string {
			rc := load(commits[2])
			rc.Added, rc.Modified = 0, 5
			return map[string]string{commits[2]: seal(rc)}
		},
	}
	for name, forge := range cases {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			defer gitIn(t, bare, "update-ref", "refs/notes/airlock", good)
			write(t, forge())
			v := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
			if v.Code != 1 {
				t.Errorf("receipt verify --remote accepts a re-sealed note (%s) that contradicts its commit on the branch: want exit 1\n%s", name, v)
			}
			if want := map[bool]string{true: "batch_tree", false: "counts"}[strings.Contains(name, "batch_tree")]; !strings.Contains(v.Stdout+v.Stderr, want) {
				t.Errorf("receipt verify --remote does not say what is wrong (%s): want it to name %s\n%s", name, want, v)
			}
		})
	}
}
