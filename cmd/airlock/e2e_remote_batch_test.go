package main_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// These scenarios land several transactions with one `land --remote`:
// a batch, as a merge queue lands it, against git daemon on 127.0.0.1.

// batchRemote is a served repository whose branch updates are logged
// (core.logAllRefUpdates), so that a test counts the pushes that moved
// main, and a host with a clone of it.
func batchRemote(t *testing.T, name string, files map[string]string) (*gitServer, string, *remoteHost) {
	t.Helper()
	srv := startDaemon(t)
	srv.seed(t, name, files)
	bare := filepath.Join(srv.root, name)
	gitIn(t, bare, "config", "core.logAllRefUpdates", "always")
	return srv, bare, newRemoteHost(t, srv.url(name))
}

// pushesTo counts the updates of ref on the server since the seed.
func pushesTo(t *testing.T, bare, ref string) int {
	t.Helper()
	out := gitIn(t, bare, "reflog", "show", "--format=%H", ref, "--")
	if out == "" {
		return 0
	}
	return len(strings.Split(out, "\n"))
}

// counter is a --validate command that appends a line to a file per run
// and fails when the candidate holds bad.txt: the change of a culprit.
func counter(runs string) string {
	return fmt.Sprintf(`echo "$AIRLOCK_TX" >> %s && test ! -e bad.txt`, runs)
}

func lineCount(t *testing.T, path string) int {
	t.Helper()
	if !testbin.Exists(path) {
		return 0
	}
	return len(strings.Split(strings.TrimSpace(testbin.ReadFile(t, path)), "\n"))
}

// noteReceipt is the receipt a landed commit's note holds on the server.
type noteReceipt struct {
	Tx           string `json:"tx"`
	LandedCommit string `json:"landed_commit"`
	Previous     string `json:"previous"`
	Digest       string `json:"digest"`
	Validated    string `json:"validated"`
	BatchTree    string `json:"batch_tree"`
	Validators   []string
}

func noteOf(t *testing.T, bare, commit string) noteReceipt {
	t.Helper()
	var r noteReceipt
	if err := json.Unmarshal([]byte(gitIn(t, bare, "notes", "--ref=airlock", "show", commit)), &r); err != nil {
		t.Fatalf("the note of %s is no receipt: %v", commit, err)
	}
	return r
}

// firstParents lists main's first-parent commits since the seed, oldest
// first.
func firstParents(t *testing.T, bare string) []string {
	t.Helper()
	out := gitIn(t, bare, "rev-list", "--first-parent", "--reverse", "main", "^main~0^{/^seed}")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func statusOf(t *testing.T, hst *remoteHost, id string) string {
	t.Helper()
	show := hst.run(nil, "show", id, "--json")
	var info struct{ Status string }
	if err := json.Unmarshal([]byte(show.Stdout), &info); err != nil {
		t.Fatalf("show %s: %v\n%s", id, err, show)
	}
	return info.Status
}

// A batch of N lands as N commits, one per transaction in the order
// given, each the parent of the next, each with its trailer and its own
// receipt note (validated "batch", naming the tip tree), in one push of
// main and one notes commit; the validator ran once, on the tip.
func TestE2ERemoteBatchLandsInOnePush(t *testing.T) {
	const n = 4
	shared := sharedFile(n)
	_, bare, hst := batchRemote(t, "b.git", map[string]string{"shared.txt": shared})
	runs := filepath.Join(testbin.RealDir(t), "runs")
	var ids []string
	for k := 0; k < n; k++ {
		ids = append(ids, hst.open(map[string]string{
			fmt.Sprintf("f%d.txt", k): fmt.Sprintf("tx %d\n", k),
			"shared.txt":              editLine(shared, 2*k+1, fmt.Sprintf("edited by tx %d", k)),
		}))
	}
	r := hst.run(nil, append([]string{"land", "-q", "--remote", "origin", "--branch", "main", "--validate", counter(runs)}, ids...)...)
	if r.Code != 0 {
		t.Fatalf("land a batch of %d:\n%s", n, r)
	}
	if got := lineCount(t, runs); got != 1 {
		t.Errorf("the validator ran %d times for a batch of %d, want once", got, n)
	}
	if p := pushesTo(t, bare, "refs/heads/main"); p != 1 {
		t.Errorf("main moved %d times, want one push", p)
	}
	if c := gitIn(t, bare, "rev-list", "--count", "refs/notes/airlock"); c != "1" {
		t.Errorf("the notes ref has %s commits, want one holding every receipt", c)
	}
	commits := firstParents(t, bare)
	if len(commits) != n {
		t.Fatalf("main has %d commits since the seed, want %d: %v", len(commits), n, commits)
	}
	tip := gitIn(t, bare, "rev-parse", "main^{tree}")
	prev := ""
	for k, c := range commits {
		if tr := gitIn(t, bare, "log", "-1", "--format=%(trailers:key=Airlock-Tx,valueonly)", c); tr != ids[k] {
			t.Errorf("commit %d carries Airlock-Tx %q, want %s", k, tr, ids[k])
		}
		rc := noteOf(t, bare, c)
		if rc.Tx != ids[k] || rc.LandedCommit != c || rc.Validated != "batch" || rc.BatchTree != tip {
			t.Errorf("receipt of commit %d: tx %s landed_commit %s validated %q batch_tree %s; want %s %s batch %s", k, rc.Tx, rc.LandedCommit, rc.Validated, rc.BatchTree, ids[k], c, tip)
		}
		if k > 0 && rc.Previous != prev {
			t.Errorf("receipt of commit %d: previous %s, want the one before's %s", k, rc.Previous, prev)
		}
		prev = rc.Digest
		if !strings.Contains(r.Stdout, "landed   "+ids[k]+"  "+c) {
			t.Errorf("the output does not say %s landed as %s\n%s", ids[k], c, r)
		}
		if s := statusOf(t, hst, ids[k]); s != "committed" {
			t.Errorf("%s is %s, want committed", ids[k], s)
		}
	}
	got := gitIn(t, bare, "show", "main:shared.txt")
	for k := 0; k < n; k++ {
		if !strings.Contains(got, fmt.Sprintf("edited by tx %d", k)) {
			t.Errorf("shared.txt on main lacks tx %d's edit:\n%s", k, got)
		}
	}
	v := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
	if v.Code != 0 || !strings.Contains(v.Stdout, fmt.Sprintf("receipts=%d", n)) {
		t.Errorf("receipt verify --remote after a batch:\n%s", v)
	}
	// Landed alone, a transaction's receipt says so.
	one := hst.open(map[string]string{"alone.txt": "alone\n"})
	if r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", "--validate", counter(runs), one); r.Code != 0 {
		t.Fatalf("land one: %s", r)
	}
	if rc := noteOf(t, bare, gitIn(t, bare, "rev-parse", "main")); rc.Tx != one || rc.Validated != "alone" || rc.BatchTree != "" {
		t.Errorf("receipt of a transaction landed alone: tx %s validated %q batch_tree %q", rc.Tx, rc.Validated, rc.BatchTree)
	}
}

// A batch that fails validation bisects: the transaction whose change
// breaks the validator is refused ValidationFailed and kept, its change
// set in its staged workspace; the ones before it land as validated, the
// ones after it are validated again without it and land; the validator
// runs no more than the bisection's bound, 2 + ceil(log2 n).
func TestE2ERemoteBatchBisectsTheCulprit(t *testing.T) {
	const n, bad = 9, 5 // the sixth transaction breaks the validator
	_, bare, hst := batchRemote(t, "x.git", map[string]string{"a.txt": "a\n"})
	runs := filepath.Join(testbin.RealDir(t), "runs")
	var ids []string
	for k := 0; k < n; k++ {
		files := map[string]string{fmt.Sprintf("f%d.txt", k): fmt.Sprintf("tx %d\n", k)}
		if k == bad {
			files["bad.txt"] = "breaks the build\n"
		}
		ids = append(ids, hst.open(files))
	}
	r := hst.run(nil, append([]string{"land", "-q", "--remote", "origin", "--branch", "main", "--validate", counter(runs)}, ids...)...)
	if r.Code != 75 || !strings.Contains(r.Stdout, "refused  "+ids[bad]+"  refused (ValidationFailed)") {
		t.Fatalf("a batch with one bad transaction: want exit 75, it refused ValidationFailed\n%s", r)
	}
	// Tip (fails), then prefixes 4 (passes), 6 (fails), 5 (passes): the
	// sixth is the culprit; 1-5 land; 7-9 are validated again.
	bound := 2 + bits.Len(uint(n-1))
	if got := lineCount(t, runs); got != 5 || got > bound {
		t.Errorf("the validator ran %d times, want 5 (bound %d)", got, bound)
	}
	commits := firstParents(t, bare)
	want := slices.Delete(slices.Clone(ids), bad, bad+1)
	if len(commits) != len(want) {
		t.Fatalf("main has %d commits since the seed, want %d", len(commits), len(want))
	}
	if p := pushesTo(t, bare, "refs/heads/main"); p != 2 {
		t.Errorf("main moved %d times, want 2 pushes: the prefix before the culprit, then the rest", p)
	}
	firstTip := gitIn(t, bare, "rev-parse", commits[bad-1]+"^{tree}")
	lastTip := gitIn(t, bare, "rev-parse", "main^{tree}")
	for k, c := range commits {
		rc := noteOf(t, bare, c)
		wantTree := firstTip
		if k >= bad {
			wantTree = lastTip
		}
		if rc.Tx != want[k] || rc.Validated != "batch" || rc.BatchTree != wantTree {
			t.Errorf("commit %d: receipt of %s validated %q on %s; want %s, batch on %s", k, rc.Tx, rc.Validated, rc.BatchTree, want[k], wantTree)
		}
	}
	if gitIn(t, bare, "ls-tree", "--name-only", "main", "bad.txt") != "" {
		t.Errorf("the culprit's bad.txt is on main")
	}
	if s := statusOf(t, hst, ids[bad]); s != "refused" {
		t.Errorf("the culprit is %s, want kept as refused", s)
	}
	if !testbin.Exists(filepath.Join(hst.stagedPath(ids[bad]), "bad.txt")) {
		t.Errorf("the culprit's change set is gone from its staged workspace")
	}
	v := hst.run(nil, "receipt", "verify", "--remote", "origin", "--branch", "main")
	if v.Code != 0 || !strings.Contains(v.Stdout, fmt.Sprintf("receipts=%d", n-1)) {
		t.Errorf("receipt verify --remote after a bisected batch:\n%s", v)
	}
}

// Two transactions of one batch that edit the same line: the later one
// is refused MergeConflict, as it would be landed after the first; the
// rest land as one batch, validated once.
func TestE2ERemoteBatchConflictWithinRefusesTheLater(t *testing.T) {
	_, bare, hst := batchRemote(t, "c.git", map[string]string{"conflict.txt": "one\ntwo\nthree\n"})
	runs := filepath.Join(testbin.RealDir(t), "runs")
	first := hst.open(map[string]string{"conflict.txt": "one\nfirst\nthree\n"})
	later := hst.open(map[string]string{"conflict.txt": "one\nlater\nthree\n"})
	other := hst.open(map[string]string{"other.txt": "other\n"})
	r := hst.run(nil, "land", "-q", "--remote", "origin", "--branch", "main", "--validate", counter(runs), first, later, other)
	if r.Code != 75 || !strings.Contains(r.Stdout, "refused  "+later+"  refused (MergeConflict)") {
		t.Fatalf("two transactions of a batch that overlap: want the later refused MergeConflict\n%s", r)
	}
	on := landed(t, bare, "main")
	if len(on[first]) != 1 || len(on[other]) != 1 || len(on[later]) != 0 {
		t.Errorf("main holds %v: want %s and %s, not %s", on, first, other, later)
	}
	if got := lineCount(t, runs); got != 1 {
		t.Errorf("the validator ran %d times, want once", got)
	}
	if p := pushesTo(t, bare, "refs/heads/main"); p != 1 {
		t.Errorf("main moved %d times, want one push", p)
	}
	if c := gitIn(t, bare, "show", "main:conflict.txt"); c != "one\nfirst\nthree" {
		t.Errorf("conflict.txt on main = %q", c)
	}
	if s := statusOf(t, hst, later); s != "refused" {
		t.Errorf("the later transaction is %s, want kept as refused", s)
	}
}

// A batch whose push finds that another host pushed first waits (a
// backoff whose randomness the test fixes: AIRLOCK_TEST_JITTER) and
// lands on top of it, fetched, built and validated again.
func TestE2ERemoteBatchRacingHostBacksOff(t *testing.T) {
	_, bare, hst := batchRemote(t, "r.git", map[string]string{"a.txt": "a\n"})
	pusher := newRemoteHost(t, filepath.Join(bare))
	runs := filepath.Join(testbin.RealDir(t), "runs")
	ids := []string{hst.open(map[string]string{"x.txt": "x\n"}), hst.open(map[string]string{"y.txt": "y\n"})}
	pause := testbin.RealDir(t)
	p := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: time.Minute,
		Args: append([]string{"land", "-q", "--remote", "origin", "--branch", "main", "--validate", counter(runs)}, ids...),
		Env:  hst.environ("AIRLOCK_TEST_PAUSE=land-remote:built:"+pause, "AIRLOCK_TEST_JITTER=0.5")})
	waitFile(t, filepath.Join(pause, "reached"))
	testbin.WriteFiles(t, pusher.clone, map[string]string{"racer.txt": "racer\n"})
	gitIn(t, pusher.clone, "add", "-A")
	gitIn(t, pusher.clone, "commit", "-q", "-m", "racer")
	gitIn(t, pusher.clone, "push", "-q", "origin", "HEAD:main")
	racer := gitIn(t, pusher.clone, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(pause, "continue"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := p.Wait()
	if r.Code != 0 || strings.Count(r.Stdout, "attempts=2") != 2 {
		t.Fatalf("a batch that lost one race: want both landed on the second attempt\n%s", r)
	}
	commits := firstParents(t, bare)
	if len(commits) != 3 || commits[0] != racer {
		t.Fatalf("main since the seed is %v, want the racer's %s then the batch", commits, racer)
	}
	if got := lineCount(t, runs); got != 2 {
		t.Errorf("the validator ran %d times, want twice: once per attempt", got)
	}
	// The wait after the first lost race is drawn from [125 ms, 250 ms]:
	// with the randomness fixed at 0.5, 187 ms.
	want := int(math.Floor(125 + 0.5*125))
	for _, id := range ids {
		show := hst.run(nil, "show", id, "--json")
		var info struct {
			Events []struct {
				Event  string
				Detail map[string]any
			}
		}
		if err := json.Unmarshal([]byte(show.Stdout), &info); err != nil {
			t.Fatalf("show %s: %v", id, err)
		}
		var waits []string
		for _, e := range info.Events {
			if e.Event == "remote_backoff" {
				waits = append(waits, fmt.Sprint(e.Detail["after_attempt"], "/", e.Detail["wait_ms"]))
			}
		}
		if !slices.Equal(waits, []string{fmt.Sprint(1, "/", want)}) {
			t.Errorf("%s's remote_backoff events are %v, want one after attempt 1 of %d ms", id, waits, want)
		}
	}
}

// Transactions opened in two clones of the remote land as one batch: the
// batch's repository reads each clone's objects, so a transaction opened
// at a commit only its own clone holds (not pushed) still builds.
func TestE2ERemoteBatchAcrossClones(t *testing.T) {
	srv, bare, hst := batchRemote(t, "k.git", map[string]string{"a.txt": "a\n"})
	second := filepath.Join(hst.base, "second")
	gitIn(t, hst.base, "clone", "-q", srv.url("k.git"), second)
	testbin.WriteFiles(t, second, map[string]string{"local.txt": "only in the second clone\n"})
	gitIn(t, second, "add", "-A")
	gitIn(t, second, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "local, not pushed")
	runs := filepath.Join(testbin.RealDir(t), "runs")
	one := hst.open(map[string]string{"one.txt": "one\n"})
	res := hst.run(nil, "open", "--workdir", second)
	if res.Code != 0 {
		t.Fatalf("open in the second clone: %s", res)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	two := lines[0]
	testbin.WriteFiles(t, lines[1], map[string]string{"two.txt": "two\n"})
	r := hst.run(nil, "land", "-q", "--remote", srv.url("k.git"), "--branch", "main", "--validate", counter(runs), one, two)
	if r.Code != 0 {
		t.Fatalf("land transactions of two clones as one batch:\n%s", r)
	}
	if got := lineCount(t, runs); got != 1 {
		t.Errorf("the validator ran %d times, want once", got)
	}
	if p := pushesTo(t, bare, "refs/heads/main"); p != 1 {
		t.Errorf("main moved %d times, want one push", p)
	}
	if got := gitIn(t, bare, "ls-tree", "--name-only", "main"); got != "a.txt\none.txt\ntwo.txt" {
		t.Errorf("main holds %q: want the seed and both transactions' files, not the unpushed commit's", got)
	}
}

// A SIGINT while a batch validates stops the landing: exit 130, no
// verdict, nothing pushed, every transaction of the batch kept open.
func TestE2ERemoteBatchInterrupted(t *testing.T) {
	_, bare, hst := batchRemote(t, "s.git", map[string]string{"a.txt": "a\n"})
	head := gitIn(t, bare, "rev-parse", "main")
	ready := testbin.RealDir(t)
	ids := []string{hst.open(map[string]string{"x.txt": "x\n"}), hst.open(map[string]string{"y.txt": "y\n"})}
	p := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Dir: hst.clone, Timeout: time.Minute, Setsid: true,
		Args: append([]string{"land", "-q", "--remote", "origin", "--branch", "main", "--validate", "touch " + ready + "/validating && exec sleep 60"}, ids...),
		Env:  hst.environ()})
	waitFile(t, filepath.Join(ready, "validating"))
	if err := p.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := p.Wait()
	if r.Code != 130 || strings.Count(r.Stdout, "stopped  ") != 2 {
		t.Fatalf("a batch interrupted while it validates: want exit 130, both stopped\n%s", r)
	}
	if h := gitIn(t, bare, "rev-parse", "main"); h != head {
		t.Errorf("an interrupted batch moved main to %s", h)
	}
	for _, id := range ids {
		if s := statusOf(t, hst, id); s != "open" {
			t.Errorf("%s is %s after the interrupt, want kept open", id, s)
		}
	}
}
