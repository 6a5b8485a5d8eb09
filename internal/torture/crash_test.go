package torture

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// crashRig alternates one base between two trees, A and B, that differ in
// a few hundred paths of every kind of change: each transaction turns the
// base from one into the other, so the base is reused across iterations
// instead of rebuilt.
type crashRig struct {
	w       *world
	states  [2]tree
	cur     int    // which state the base holds
	pending string // a transaction towards the other state, not yet committed
	seq     int
	// committed lists the transactions that took the base to the other
	// state, in order: `airlock log` must list exactly these.
	committed []string
	tally     map[string]int
}

func newCrashRig(t *testing.T, w *world, seed uint64, files, changes int) *crashRig {
	t.Helper()
	g := newGen(seed)
	a := g.base(files)
	b := withoutLinkedParents(a, g.mutate(a, changes))
	materialize(t, w.base, a)
	if got := snapshot(t, w.base); !got.equal(a) {
		t.Fatalf("materialize did not build tree A:\n%s", a.diff(got, 10))
	}
	return &crashRig{w: w, states: [2]tree{a, b}, tally: map[string]int{}}
}

// prepare makes sure a transaction towards the other state is open.
func (c *crashRig) prepare() string {
	c.w.t.Helper()
	if c.pending != "" {
		return c.pending
	}
	c.seq++
	id := fmt.Sprintf("c%04d", c.seq)
	staged := c.w.open(id)
	materialize(c.w.t, staged, c.states[1-c.cur])
	c.pending = id
	return id
}

// settle checks the base after a commit that may have been killed and
// recovered: it must be exactly the state before or the state after, and
// the transaction's status must say which.
func (c *crashRig) settle(what string) {
	t := c.w.t
	t.Helper()
	got := snapshot(t, c.w.base)
	before, after := c.states[c.cur], c.states[1-c.cur]
	status := c.w.status(c.pending)
	switch {
	case got.equal(before):
		if status == "committed" || status == "interrupted" {
			t.Fatalf("%s: the base is the state before, but transaction %s says %s", what, c.pending, status)
		}
		c.tally["base before"]++
	case got.equal(after):
		if status != "committed" {
			t.Fatalf("%s: the base is the state after, but transaction %s says %s", what, c.pending, status)
		}
		c.tally["base after"]++
		c.committed = append(c.committed, c.pending)
		c.cur, c.pending = 1-c.cur, ""
	default:
		t.Fatalf("%s: the base is neither the state before nor the state after\nagainst before:\n%s\nagainst after:\n%s",
			what, before.diff(got, 15), after.diff(got, 15))
	}
}

// recover runs `airlock recover` to completion and tallies what it did.
func (c *crashRig) recover(what string) {
	t := c.w.t
	t.Helper()
	r := c.w.airlock("recover", "--workdir", c.w.base)
	if r.Code != 0 {
		t.Fatalf("%s: recover failed: %v", what, r)
	}
	switch {
	case strings.Contains(r.Stderr, "nothing to recover"):
		c.tally["recover: nothing"]++
	case strings.Contains(r.Stderr, "rolled"):
		c.tally["recover: rolled back"]++
	case strings.Contains(r.Stderr, "had committed"):
		c.tally["recover: rolled forward"]++
	default:
		t.Fatalf("%s: recover said something unexpected: %v", what, r)
	}
}

// killAfter starts airlock with args and SIGKILLs it after d, unless it
// ended first. It reports whether the kill landed.
func (c *crashRig) killAfter(d time.Duration, env []string, args ...string) (bool, result) {
	p := c.w.start(env, args...)
	timer := time.AfterFunc(d, func() { p.Signal(syscall.SIGKILL) })
	r := p.WaitSettled()
	timer.Stop()
	return r.Signal == syscall.SIGKILL, r
}

// timeCommit commits a prepared transaction cleanly and returns how long
// the process took.
func (c *crashRig) timeCommit() time.Duration {
	c.w.t.Helper()
	id := c.prepare()
	start := time.Now()
	r := c.w.airlock("commit", id)
	d := time.Since(start)
	if r.Code != 0 || r.Settle["outcome"] != "committed" {
		c.w.t.Fatalf("clean commit: %v", r)
	}
	c.settle("clean commit " + id)
	return d
}

// applySteps reads the journal a commit left when it was killed at
// journal-synced and counts the apply's fault-point steps: one per removal
// and one per creation.
func applySteps(t *testing.T, jfile string) int {
	t.Helper()
	b, err := os.ReadFile(jfile)
	if err != nil {
		t.Fatalf("read the journal left at journal-synced: %v", err)
	}
	var j struct {
		Ops []struct {
			Before struct{ Kind string } `json:"before"`
			After  struct{ Kind string } `json:"after"`
		} `json:"ops"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, op := range j.Ops {
		bk, ak := op.Before.Kind, op.After.Kind
		if bk != "none" && (ak == "none" || (bk != ak && (bk == "dir" || ak == "dir"))) {
			n++
		}
		if ak != "none" {
			n++
		}
	}
	return n
}

// TestCrashTorture kills `airlock commit` with SIGKILL at random moments
// spread over the whole commit, and at every named fault point, then runs
// `airlock recover` (itself killed part-way in a quarter of the
// iterations, then run again): the base must be byte for byte, mode for
// mode, type for type, the state before or the state after, never a mix,
// and the transaction's status must agree with it.
//
// Most iterations run on a tmpfs, where fsync is free: a SIGKILL leaves the
// page cache intact, so the crash model is the same and many more
// iterations fit. A few run on the disk of the temporary directory.
func TestCrashTorture(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("AIRLOCK_TORTURE_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	t.Logf("seed %d (AIRLOCK_TORTURE_SEED=%d replays it)", seed, seed)
	t.Run("tmpfs", func(t *testing.T) {
		dir := memDir(t)
		if dir == "" {
			testbin.Missing(t, "no tmpfs at /dev/shm; the disk variant still runs")
		}
		crashTorture(t, newWorldIn(t, dir), seed, scaled(220))
	})
	t.Run("disk", func(t *testing.T) {
		crashTorture(t, newWorld(t), seed+1, scaled(10))
	})
}

func crashTorture(t *testing.T, w *world, seed uint64, iters int) {
	c := newCrashRig(t, w, seed, 240, 200)
	t.Logf("trees of %d and %d entries, %d paths differ", len(c.states[0]), len(c.states[1]), c.states[0].changed(c.states[1]))
	rng := rand.New(rand.NewPCG(seed, 7))

	// Measure a whole commit in both directions, so that kills can be
	// spread over all of it.
	d := max(c.timeCommit(), c.timeCommit())
	t.Logf("a clean commit takes %v", d)

	// The number of apply steps, from a journal left at journal-synced.
	id := c.prepare()
	if killed, r := c.killAfter(time.Minute, []string{"AIRLOCK_TEST_FAULT=journal-synced"}, "commit", id); !killed {
		t.Fatalf("the journal-synced fault point was not reached: %v", r)
	}
	steps := applySteps(t, filepath.Join(c.w.txDir(id), "journal", "journal.json"))
	start := time.Now()
	c.recover("after journal-synced")
	rd := time.Since(start)
	c.settle("journal-synced")
	t.Logf("%d apply steps; a recover takes %v", steps, rd)
	c.tally = map[string]int{}

	points := []string{"journal-synced", "checked", "apply-staged", "applied"}
	faults := 0
	for i := range iters {
		id := c.prepare()
		var env []string
		what := ""
		var delay time.Duration
		switch {
		case i%5 == 1:
			// A named fault point: the fixed ones in turn, and apply:N
			// sampled over the whole apply.
			p := points[(i/10)%len(points)]
			if (i/5)%2 == 1 {
				p = fmt.Sprintf("apply:%d", 1+rng.IntN(steps))
			}
			env = []string{"AIRLOCK_TEST_FAULT=" + p}
			delay = time.Minute
			what = fmt.Sprintf("iteration %d: fault %s in commit %s", i, p, id)
		default:
			delay = time.Duration(rng.Int64N(int64(d) * 13 / 10))
			what = fmt.Sprintf("iteration %d: SIGKILL after %v in commit %s", i, delay, id)
		}
		killed, r := c.killAfter(delay, env, "commit", id)
		switch {
		case killed && env != nil:
			faults++
			c.tally["fault point reached"]++
		case killed:
			c.tally["commit killed"]++
		case r.Code == 0 && r.Settle["outcome"] == "committed":
			c.tally["commit finished"]++
		default:
			t.Fatalf("%s: %v", what, r)
		}
		if killed && c.inflight() && rng.IntN(3) == 0 {
			// Kill recover itself part-way, then recover again.
			k, rr := c.killAfter(time.Duration(rng.Int64N(int64(rd)*13/10)), nil, "recover", "--workdir", c.w.base)
			if k {
				c.tally["recover killed"]++
			} else if rr.Code != 0 {
				t.Fatalf("%s: recover: %v", what, rr)
			}
		}
		c.recover(what)
		c.settle(what)
	}
	t.Logf("%d iterations, %d at fault points: %v", iters, faults, c.tally)
	// The fault points alone guarantee rollbacks; random kills over a
	// couple of hundred commits must also have landed before the apply,
	// in it, and after it.
	if c.tally["recover: rolled back"] == 0 || iters >= 100 && (c.tally["base after"] == 0 || c.tally["base before"] == 0) {
		t.Errorf("the kills did not spread over the commit: %v", c.tally)
	}
	c.checkLog()
}

// checkLog holds `airlock log` to the commits the torture saw land: every
// one of them, newest first, in an unbroken chain.
func (c *crashRig) checkLog() {
	t := c.w.t
	t.Helper()
	r := c.w.must("log", "--workdir", c.w.base, "--json")
	var l struct {
		Broken  string `json:"broken"`
		Entries []struct {
			Tx string `json:"tx"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &l); err != nil {
		t.Fatalf("log --json: %v", err)
	}
	var got []string
	for _, e := range l.Entries {
		got = append(got, e.Tx)
	}
	var want []string
	for i := len(c.committed) - 1; i >= 0; i-- {
		want = append(want, c.committed[i])
	}
	if l.Broken != "" || strings.Join(got, " ") != strings.Join(want, " ") {
		missing := []string{}
		in := map[string]bool{}
		for _, g := range got {
			in[g] = true
		}
		for _, w := range want {
			if !in[w] {
				missing = append(missing, w)
			}
		}
		t.Errorf("airlock log lists %d commits, the base went through %d (broken %q); missing: %v", len(got), len(want), l.Broken, missing)
	}
}

// inflight reports whether the base is marked as having an apply in
// flight, i.e. whether recover has work to do.
func (c *crashRig) inflight() bool {
	m, _ := filepath.Glob(filepath.Join(c.w.state, "bases", "*", "inflight"))
	return len(m) > 0
}

// TestKillAfterCommittedEvent kills a commit at the last steps of its
// bookkeeping, after the committed event is in the log: just before the
// receipt is filed in the base's chain, and just before the chain's head
// moves to it. recover rolls the commit forward; `airlock log` must then
// list it, as it lists every commit that reached the base.
func TestKillAfterCommittedEvent(t *testing.T) {
	needStrace(t)
	for _, at := range []string{"receipts", "head"} {
		t.Run(at, func(t *testing.T) {
			w := newWorld(t)
			materialize(t, w.base, tree{".": {Kind: kDir, Mode: 0o755}, "a": {Kind: kFile, Mode: 0o644, Data: "a"}})
			staged := w.open("k1")
			check(t, os.WriteFile(filepath.Join(staged, "a"), []byte("b"), 0o644))
			w.must("show", "k1") // makes the base's state directory
			bases, _ := filepath.Glob(filepath.Join(w.state, "bases", "*"))
			if len(bases) != 1 {
				t.Fatalf("want one base state directory, have %v", bases)
			}
			// Kill the process as it renames a file into bases/<key>/head,
			// or as it creates the receipts directory's first entry.
			target := filepath.Join(bases[0], "head")
			calls := "rename,renameat,renameat2"
			if at == "receipts" {
				target = filepath.Join(bases[0], "receipts")
				calls = "mkdir,mkdirat"
			}
			c := w.cmd(nil, "commit", "k1")
			c.Bin, c.Args = "strace", append([]string{"-f", "-qq", "-o", "/dev/null", "-P", target, "-e", "trace=" + calls, "-e", "inject=" + calls + ":signal=KILL", bin}, c.Args...)
			if r := testbin.Run(t, c); r.Code == 0 {
				t.Fatalf("the commit was not killed at %s: %v", target, r)
			}
			if s := w.status("k1"); s != "committed" {
				t.Fatalf("killed after the committed event, the transaction says %s", s)
			}
			w.must("recover", "--workdir", w.base)
			r := w.must("log", "--workdir", w.base, "--json")
			if !strings.Contains(r.Stdout, `"tx": "k1"`) {
				t.Fatalf("airlock log does not list the commit that recover rolled forward:\n%s", r.Stdout)
			}
		})
	}
}
