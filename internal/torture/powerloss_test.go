package torture

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/testbin"
)

// journalOps reads the ops of a journal file (or the applied copy of one).
func journalOps(t *testing.T, file string) []struct {
	Path   string
	Before struct {
		Kind   string
		Mode   uint32
		Digest string
	}
	After struct {
		Kind   string
		Mode   uint32
		Digest string
	}
} {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Ops []struct {
			Path   string
			Before struct {
				Kind   string
				Mode   uint32
				Digest string
			}
			After struct {
				Kind   string
				Mode   uint32
				Digest string
			}
		}
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return j.Ops
}

// powerLossTrees are a base and a change set with every kind of change,
// including a change of mode alone, for the trace tests.
func powerLossTrees(t *testing.T, w *world) (tree, tree) {
	g := newGen(20261129)
	a := g.base(70)
	b := withoutLinkedParents(a, g.mutate(a, 60))
	// A mode-only change of a file and of a directory, for certain.
	a["modeonly"] = node{Kind: kFile, Mode: 0o644, Data: "same bytes\n"}
	b["modeonly"] = node{Kind: kFile, Mode: 0o755, Data: "same bytes\n"}
	a["modedir"] = node{Kind: kDir, Mode: 0o755}
	b["modedir"] = node{Kind: kDir, Mode: 0o700}
	a["modedir/x"] = node{Kind: kFile, Mode: 0o644, Data: "x"}
	b["modedir/x"] = node{Kind: kFile, Mode: 0o644, Data: "x"}
	materialize(t, w.base, a)
	return a, b
}

// TestPowerLossOrder records the system calls of a commit with strace and
// holds their order to what survives a power cut: no file reaches its name
// before its bytes are fsync'd; the journal, every backup and the in-flight
// marker are durable before the first change to the base; and every file
// and directory the apply changed is fsync'd before `committed` is
// printed. A syncfs of a file system counts as an fsync of everything on
// it: the commit batches its fsyncs so where the file system is trusted
// to (syncfs), and fsyncs each file and directory where it is not
// (fsync-each, forced by AIRLOCK_TEST_OFF=syncfs).
func TestPowerLossOrder(t *testing.T) {
	needStrace(t)
	t.Run("syncfs", func(t *testing.T) { powerLossOrder(t, nil) })
	t.Run("fsync-each", func(t *testing.T) { powerLossOrder(t, []string{fault.OffEnv + "=syncfs"}) })
}

func powerLossOrder(t *testing.T, env []string) {
	w := newWorld(t)
	_, b := powerLossTrees(t, w)
	staged := w.open("p1")
	materialize(t, staged, b)
	tr := filepath.Join(w.root, "commit.trace")
	if r := testbin.Run(t, straceCmd(w, tr, env, "commit", "p1")); r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "airlock.outcome=committed") {
		t.Fatalf("traced commit: %v", r)
	}
	if got := snapshot(t, w.base); !got.equal(b) {
		t.Fatalf("the traced commit did not produce the change set:\n%s", b.diff(got, 10))
	}
	tl := parseTrace(t, tr)
	syncfs := 0
	for _, ev := range tl.events {
		if ev.name == "syncfs" && ev.ok {
			syncfs++
		}
	}
	t.Logf("%d syncfs calls", syncfs)
	if env != nil && syncfs > 0 {
		t.Errorf("%d syncfs calls with syncfs turned off: the fallback that fsyncs each file is not the one tested", syncfs)
	}
	ops := journalOps(t, filepath.Join(w.txDir("p1"), "applied.json"))
	committed := tl.firstWrite2("airlock.outcome=committed")
	if committed < 0 {
		t.Fatal("the trace holds no write of airlock.outcome=committed to stderr")
	}

	firstMut := -1
	for _, ev := range tl.events {
		if m, _ := ev.mutates(w.base); m {
			firstMut = ev.i
			break
		}
	}
	if firstMut < 0 {
		t.Fatal("the trace holds no change to the base")
	}
	t.Logf("%d system calls traced; the first change to the base is call %d, committed is printed at %d", len(tl.events), firstMut, committed)

	// No file is renamed into place before its bytes are fsync'd.
	n := tl.checkRenamedSynced(t)
	t.Logf("%d renames of new files checked", n)

	// The journal, every backup and the in-flight marker are durable
	// before the first change to the base.
	jdir := filepath.Join(w.txDir("p1"), "journal")
	durableBefore := func(what, file string) {
		t.Helper()
		r := -1
		for _, ev := range tl.events[:firstMut] {
			if ev.ok && strings.HasPrefix(ev.name, "rename") && ev.dst == file {
				r = ev.i
			}
		}
		if r < 0 {
			t.Errorf("%s %s was not in place before the first change to the base (call %d)", what, file, firstMut)
			return
		}
		if tl.fsyncedAfter(path.Dir(file), r, firstMut) < 0 {
			t.Errorf("the directory of %s %s was not fsync'd between its rename (call %d) and the first change to the base (call %d)", what, file, r, firstMut)
		}
	}
	durableBefore("the journal", filepath.Join(jdir, "journal.json"))
	bases, _ := filepath.Glob(filepath.Join(w.state, "bases", "*"))
	if len(bases) != 1 {
		t.Fatalf("want one base state directory, have %v", bases)
	}
	durableBefore("the in-flight marker", filepath.Join(bases[0], "inflight"))
	if tl.fsyncedAfter(w.txDir("p1"), -1, firstMut) < 0 {
		t.Errorf("the transaction directory (holding the journal directory) was not fsync'd before the first change to the base")
	}
	backups, lastBackup := 0, -1
	for _, ev := range tl.events[:firstMut] {
		if ev.creates() && path.Dir(ev.path) == filepath.Join(jdir, "backup") {
			backups++
			lastBackup = ev.i
			if tl.fsyncedAfter(ev.path, ev.i, firstMut) < 0 {
				t.Errorf("backup %s was not fsync'd before the first change to the base", ev.path)
			}
		}
	}
	want := 0
	for _, op := range ops {
		if op.Before.Kind == "file" {
			want++
		}
	}
	if backups != want {
		t.Errorf("%d backups were written before the first change to the base; the journal names %d", backups, want)
	}
	if backups > 0 && tl.fsyncedAfter(filepath.Join(jdir, "backup"), lastBackup, firstMut) < 0 {
		t.Errorf("the backup directory was not fsync'd after its last backup and before the first change to the base")
	}
	t.Logf("%d backups durable before the first change", backups)

	// Every directory whose entries changed is fsync'd after its last
	// change and before committed is printed.
	checkDirsSynced(t, tl, w.base, committed)

	// The originals the commit kept (what undo restores, and the merge
	// bases of the transactions still open) are durable before it is
	// reported: every directory of the base's state whose entries changed,
	// the store's own directories created by this first commit included,
	// and the last write to the store's index.
	checkDirsSynced(t, tl, bases[0], committed)
	index := filepath.Join(bases[0], "originals", "index.jsonl")
	lastIndex := -1
	for _, ev := range tl.events[:committed] {
		if ev.ok && ev.name == "write" && ev.path == index {
			lastIndex = ev.i
		}
	}
	if lastIndex < 0 {
		t.Errorf("the commit replaced files but wrote no record to %s before committed was printed", index)
	} else if tl.fsyncedAfter(index, lastIndex, committed) < 0 {
		t.Errorf("the last write to %s (call %d) was not fsync'd before committed was printed", index, lastIndex)
	}

	// Changes of mode: strace 6.1 shows fchmodat2's directory, not the
	// entry. A directory whose mode the commit set must be fsync'd after
	// the last chmod in its parent (the apply sets directory modes last).
	// A file whose mode alone changed has no bytes rewritten, so an fsync
	// of it after a chmod in its directory during the apply can only be
	// for its mode.
	lastChmod, firstChmod := map[string]int{}, map[string]int{}
	for _, ev := range tl.events[:committed] {
		if ev.ok && (ev.name == "fchmodat2" || ev.name == "fchmodat") {
			d := ev.path
			if ev.name == "fchmodat" {
				d = path.Dir(ev.path)
			}
			lastChmod[d] = ev.i
			if _, ok := firstChmod[d]; !ok && ev.i > firstMut {
				firstChmod[d] = ev.i
			}
		}
	}
	modes := 0
	for _, op := range ops {
		full := filepath.Join(w.base, op.Path)
		modeOnly := op.Before.Kind == "file" && op.After.Kind == "file" && op.Before.Digest == op.After.Digest && op.Before.Mode != op.After.Mode
		dirMode := op.After.Kind == "dir"
		if !modeOnly && !dirMode {
			continue
		}
		modes++
		after := lastChmod[path.Dir(full)]
		if modeOnly {
			after = firstChmod[path.Dir(full)]
		}
		if after == 0 || tl.fsyncedAfter(full, after, committed) < 0 {
			t.Errorf("%s had its mode set (mode only: %v) but was not fsync'd before committed was printed: a power cut can lose the new mode of a commit reported durable", op.Path, modeOnly)
		}
	}
	t.Logf("%d changes of mode checked", modes)

	// The commit's own record is durable before it is reported.
	events := filepath.Join(w.txDir("p1"), "events.jsonl")
	lastWrite := -1
	for _, ev := range tl.events[:committed] {
		if ev.ok && ev.name == "write" && ev.path == events {
			lastWrite = ev.i
		}
	}
	if lastWrite < 0 || tl.fsyncedAfter(events, lastWrite, committed) < 0 {
		t.Errorf("the event log's last write before committed (call %d) was not fsync'd before committed was printed", lastWrite)
	}
}

// checkDirsSynced: every directory under root whose entries the traced
// process changed, and that still exists, was fsync'd after its last change
// and before the event at end.
func checkDirsSynced(t *testing.T, tl *traceLog, root string, end int) {
	t.Helper()
	last := map[string]int{}
	for _, ev := range tl.events[:end] {
		if m, dirs := ev.mutates(root); m {
			for _, d := range dirs {
				if d == root || strings.HasPrefix(d, root+"/") {
					last[d] = ev.i
				}
			}
		}
	}
	for d, i := range last {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			continue // removed since: its parent's fsync covers it
		}
		if tl.fsyncedAfter(d, i, end) < 0 {
			t.Errorf("directory %s was changed (call %d: %s) but not fsync'd afterwards before call %d", d, i, tl.events[i].line, end)
		}
	}
	t.Logf("%d touched directories checked", len(last))
}

// TestPowerLossOrderRecover holds recover to the same order: every file it
// puts back reaches its name only after its bytes are fsync'd, and every
// directory it changed is fsync'd before it reports the rollback.
func TestPowerLossOrderRecover(t *testing.T) {
	needStrace(t)
	w := newWorld(t)
	a, b := powerLossTrees(t, w)
	staged := w.open("p2")
	materialize(t, staged, b)
	r := w.airlockEnv([]string{"AIRLOCK_TEST_FAULT=apply:40"}, "commit", "p2")
	if r.Signal == 0 {
		t.Fatalf("the apply:40 fault point was not reached: %v", r)
	}
	if snapshot(t, w.base).equal(a) {
		t.Fatal("the killed apply changed nothing: the test needs a half-applied base")
	}
	tr := filepath.Join(w.root, "recover.trace")
	if r := testbin.Run(t, straceCmd(w, tr, nil, "recover", "--workdir", w.base)); r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "rolled") {
		t.Fatalf("traced recover: %v", r)
	}
	if got := snapshot(t, w.base); !got.equal(a) {
		t.Fatalf("recover did not restore the base:\n%s", a.diff(got, 10))
	}
	tl := parseTrace(t, tr)
	end := tl.firstWrite2("rolled")
	if end < 0 {
		t.Fatal("the trace holds no report of the rollback on stderr")
	}
	n := tl.checkRenamedSynced(t)
	t.Logf("%d system calls, %d renames of new files checked", len(tl.events), n)
	checkDirsSynced(t, tl, w.base, end)
}
