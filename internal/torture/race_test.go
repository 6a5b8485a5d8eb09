package torture

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// editor is another process's view of the base: it keeps appending unique
// lines to files, in place (O_APPEND) or by writing a new file and
// renaming it over the old one, and records each edit that succeeded.
type editor struct {
	base  string
	paths []string
	rng   *rand.Rand
	mu    sync.Mutex
	lines map[string][]string // path -> lines it wrote
	times map[string]time.Time
	hows  map[string]string
	n     int
}

func newEditor(base string, paths []string, seed uint64) *editor {
	return &editor{base: base, paths: paths, rng: rand.New(rand.NewPCG(seed, 3)), lines: map[string][]string{}, times: map[string]time.Time{}, hows: map[string]string{}}
}

// edit makes one edit; a path that is gone is left gone (that edit failed
// visibly and is not recorded).
func (e *editor) edit() {
	e.n++
	p := e.paths[e.rng.IntN(len(e.paths))]
	full := filepath.Join(e.base, p)
	line := fmt.Sprintf("edit %d by the editor\n", e.n)
	inPlace := e.rng.IntN(2) == 0
	if inPlace {
		f, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return
		}
		_, err = f.WriteString(line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return
		}
	} else {
		b, err := os.ReadFile(full)
		if err != nil {
			return
		}
		tmp := filepath.Join(filepath.Dir(full), fmt.Sprintf(".editor-%d", e.n))
		if err := os.WriteFile(tmp, append(b, line...), 0o644); err != nil {
			return
		}
		if err := os.Rename(tmp, full); err != nil {
			os.Remove(tmp)
			return
		}
	}
	how := "rename-replace"
	if inPlace {
		how = "in place"
	}
	e.mu.Lock()
	e.lines[p] = append(e.lines[p], line)
	e.times[p+"\x00"+line] = time.Now()
	e.hows[p+"\x00"+line] = how
	e.mu.Unlock()
}

// run edits until stop is closed, pausing briefly between edits.
func (e *editor) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		default:
		}
		e.edit()
		time.Sleep(time.Duration(e.rng.IntN(300)) * time.Microsecond)
	}
}

// lost lists the recorded edits no longer in the base, with when they were
// made.
func (e *editor) lost(t *testing.T) []string {
	t.Helper()
	var out []string
	for p, ls := range e.lines {
		b, _ := os.ReadFile(filepath.Join(e.base, p))
		for _, l := range ls {
			if !strings.Contains(string(b), l) {
				out = append(out, fmt.Sprintf("%s: %q (made %s at %s)", p, strings.TrimSpace(l), e.hows[p+"\x00"+l], e.times[p+"\x00"+l].Format("15:04:05.000000")))
			}
		}
	}
	sort.Strings(out)
	return out
}

// made is count for while the editor runs.
func (e *editor) made() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.count()
}

func (e *editor) count() int {
	n := 0
	for _, ls := range e.lines {
		n += len(ls)
	}
	return n
}

// raceBase lays out the files the transaction changes (same/), the files
// it deletes (del/) and files it never touches (other/).
func raceBase(t *testing.T, w *world) (same, del, other []string) {
	t.Helper()
	tr := tree{".": {Kind: kDir, Mode: 0o755}, "same": {Kind: kDir, Mode: 0o755}, "del": {Kind: kDir, Mode: 0o755}, "other": {Kind: kDir, Mode: 0o755}}
	for i := range 12 {
		for _, d := range []string{"same", "del", "other"} {
			p := fmt.Sprintf("%s/f%02d", d, i)
			tr[p] = node{Kind: kFile, Mode: 0o644, Data: "original line\n"}
			switch d {
			case "same":
				same = append(same, p)
			case "del":
				del = append(del, p)
			default:
				other = append(other, p)
			}
		}
	}
	materialize(t, w.base, tr)
	return same, del, other
}

// stageRaceChanges makes the transaction rewrite every same/ file and
// delete every del/ file.
func stageRaceChanges(t *testing.T, staged string, same, del []string) {
	t.Helper()
	for _, p := range same {
		check(t, os.WriteFile(filepath.Join(staged, p), []byte("the transaction's line\n"), 0o644))
	}
	for _, p := range del {
		check(t, os.Remove(filepath.Join(staged, p)))
	}
}

// TestRacingEditorWhileOpen: another process edits the base, on the paths
// the transaction changes and on others, while the transaction is open.
// The commit then merges or refuses: no edit is lost.
func TestRacingEditorWhileOpen(t *testing.T) {
	for i := range scaled(5) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			w := newWorld(t)
			same, del, other := raceBase(t, w)
			staged := w.open("r1")
			stageRaceChanges(t, staged, same, del)
			ed := newEditor(w.base, append(append(append([]string{}, same...), del...), other...), uint64(i))
			stop, done := make(chan struct{}), make(chan struct{})
			go ed.run(stop, done)
			// A tenth of a second, and as long as it takes the editor to
			// make a few edits: a busy machine may not run it at all in
			// that time, and a test without edits proves nothing.
			time.Sleep(100 * time.Millisecond)
			for deadline := time.Now().Add(time.Minute); ed.made() < 20 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			close(stop)
			<-done
			r := w.airlock("commit", "r1")
			if r.Code != 0 && r.Code != 75 {
				t.Fatalf("want a commit or a refusal: %v", r)
			}
			if lost := ed.lost(t); len(lost) > 0 {
				t.Fatalf("%d of %d edits made while the transaction was open were lost (commit: %s %s):\n%s", len(lost), ed.count(), r.Settle["outcome"], r.Settle["refusal"], strings.Join(lost, "\n"))
			}
			t.Logf("%d edits, commit %s %s", ed.count(), r.Settle["outcome"], r.Settle["refusal"])
		})
	}
}

// TestRacingEditorDuringCommit: the other process edits the base while the
// commit runs. Every edit must survive: in the base, or kept aside in the
// transaction's state and named by the refusal, whether it reached the
// file before the commit's checks, between a path's last re-check and its
// replacement, or while a rollback ran.
func TestRacingEditorDuringCommit(t *testing.T) {
	lostOther, lostChanged, edits, commits, failures, kept := 0, 0, 0, 0, 0, 0
	var examples []string
	// The editor starts at a random moment of the commit, so that some
	// commits pass their checks before it starts: measure one first.
	mw := newWorld(t)
	ms, md, _ := raceBase(t, mw)
	stageRaceChanges(t, mw.open("m"), ms, md)
	start := time.Now()
	mw.must("commit", "m")
	d := time.Since(start)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	iters := scaled(20)
	for i := range iters {
		w := newWorld(t)
		same, del, other := raceBase(t, w)
		staged := w.open(fmt.Sprintf("r%d", i))
		stageRaceChanges(t, staged, same, del)
		ed := newEditor(w.base, append(append(append([]string{}, same...), del...), other...), uint64(100+i))
		stop, done := make(chan struct{}), make(chan struct{})
		p := w.start(nil, "commit", fmt.Sprintf("r%d", i))
		delay := time.Duration(rng.Int64N(int64(d)))
		go func() { // the editor starts late

			time.Sleep(delay)
			ed.run(stop, done)
		}()
		r := p.WaitSettled()
		time.Sleep(5 * time.Millisecond)
		close(stop)
		<-done
		switch r.Code {
		case 0:
			commits++
		case 75:
		case 125:
			// The apply and its rollback both met the editor's writes:
			// airlock kept the journal and said to recover.
			if !strings.Contains(r.Stderr, "airlock recover") {
				t.Fatalf("failed without saying what to do: %v", r)
			}
			if rr := w.airlock("recover", "--workdir", w.base); rr.Code != 0 {
				t.Fatalf("recover after a failed commit and rollback: %v", rr)
			}
			failures++
			if failures == 1 {
				t.Logf("first commit that failed and was recovered: %s", r.Stderr)
			}
		default:
			t.Fatalf("want a commit, a refusal or a failure that keeps the journal: %v", r)
		}
		edits += ed.count()
		for _, l := range ed.lost(t) {
			if displaced(t, w, l) {
				kept++
				continue
			}
			if strings.HasPrefix(l, "other/") {
				lostOther++
				t.Errorf("an edit to a path the transaction never touched was lost: %s", l)
				continue
			}
			lostChanged++
			if len(examples) < 5 {
				examples = append(examples, fmt.Sprintf("%s (commit exit %d %s %s, began %v after the commit started)", l, r.Code, r.Settle["outcome"], r.Settle["refusal"], delay))
			}
		}
	}
	t.Logf("%d edits during %d commits (%d committed, %d failed and recovered; a commit takes %v): %d lost on untouched paths, %d lost on paths the commit changed, %d kept aside by recover", edits, iters, commits, failures, d, lostOther, lostChanged, kept)
	if lostChanged > 0 {
		t.Errorf("%d edits to paths the commit changed were lost, e.g.:\n%s", lostChanged, strings.Join(examples, "\n"))
	}
}

// TestEditAfterJournalIsLost makes the window deterministic: the commit is
// paused once its journal is synced (every path checked and backed up),
// another process appends to a file the transaction rewrites and to one it
// deletes, and the commit goes on. It must refuse (BaseDrift) or keep both
// edits: the apply re-checks each path right before it replaces it.
func TestEditAfterJournalIsLost(t *testing.T) {
	w := newWorld(t)
	same, del, _ := raceBase(t, w)
	staged := w.open("w1")
	stageRaceChanges(t, staged, same, del)
	r := w.commitPausedAt("journal-synced", "w1", func() {
		for _, f := range []string{"same/f05", "del/f05"} {
			fh, err := os.OpenFile(filepath.Join(w.base, f), os.O_WRONLY|os.O_APPEND, 0)
			check(t, err)
			_, err = fh.WriteString("an edit made after the journal was synced\n")
			check(t, err)
			check(t, fh.Close())
		}
	})
	for _, f := range []string{"same/f05", "del/f05"} {
		b, err := os.ReadFile(filepath.Join(w.base, f))
		if err != nil || !strings.Contains(string(b), "after the journal") {
			t.Errorf("the edit to %s is gone (commit %s %s, exit %d): %q %v", f, r.Settle["outcome"], r.Settle["refusal"], r.Code, b, err)
		}
	}
}

// displaced reports whether a lost edit (as lost lists it) was kept aside
// by recover in a displaced-* directory of the transaction's state.
func displaced(t *testing.T, w *world, lost string) bool {
	t.Helper()
	_, q, _ := strings.Cut(lost, ": ")
	q = q[:strings.LastIndex(q, " (made ")]
	line := ""
	if _, err := fmt.Sscanf(q, "%q", &line); err != nil {
		return false
	}
	files, _ := filepath.Glob(filepath.Join(w.state, "tx", "*", "displaced-*", "*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), line) {
			return true
		}
	}
	return false
}

// TestEditDuringApplyIsKept pauses the apply after its last step, when every
// path has been written, and appends to a file the commit has just
// replaced. The apply's verification then fails and the commit rolls back;
// the rollback must not throw the edit away: it stays in the base, or is
// kept aside in the transaction's state and reported.
func TestEditDuringApplyIsKept(t *testing.T) {
	w := newWorld(t)
	same, del, _ := raceBase(t, w)
	staged := w.open("w2")
	stageRaceChanges(t, staged, same, del)
	pause := t.TempDir()
	steps := len(same) + len(del) // a creation per rewrite, a removal per delete
	p := w.start([]string{fmt.Sprintf("AIRLOCK_TEST_PAUSE=apply:%d:%s", steps, pause)}, "commit", "w2")
	waitFile(t, filepath.Join(pause, "reached"), p)
	const edit = "an edit made while the apply ran\n"
	fh, err := os.OpenFile(filepath.Join(w.base, "same/f00"), os.O_WRONLY|os.O_APPEND, 0)
	check(t, err)
	_, err = fh.WriteString(edit)
	check(t, err)
	check(t, fh.Close())
	check(t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o644))
	r := p.WaitSettled()
	if r.Code == 125 {
		w.must("recover", "--workdir", w.base)
	}
	if b, _ := os.ReadFile(filepath.Join(w.base, "same/f00")); strings.Contains(string(b), edit) {
		return
	}
	found := ""
	filepath.Walk(w.state, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), edit) {
				found = p
			}
		}
		return nil
	})
	if found == "" {
		t.Fatalf("the edit to same/f00 is in neither the base nor the transaction's state (commit exit %d %s %s): lost", r.Code, r.Settle["outcome"], r.Settle["refusal"])
	}
	if !strings.Contains(r.Stderr, found) && !strings.Contains(r.Stderr, filepath.Dir(found)) {
		t.Errorf("the edit was kept in %s, but the commit's report does not say where: %v", found, r)
	}
}
