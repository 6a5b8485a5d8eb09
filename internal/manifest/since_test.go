package manifest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/fsclock"
)

// fineClock has a 2 ms window: a directory last changed 50 ms before a
// walk is proved by it.
var fineClock = fsclock.Clock{Type: "test", StoredNs: 1, TickNs: int64(time.Millisecond), Measured: true}

// minuteClock keeps whole minutes: nothing made during a test is proved.
var minuteClock = fsclock.Clock{Type: "test", StoredNs: int64(time.Minute), TickNs: int64(time.Millisecond), Measured: true}

func paths(m *Manifest) []string {
	var ps []string
	for _, e := range m.Entries {
		ps = append(ps, e.Path)
	}
	return ps
}

// settledTree makes a small tree and returns it once its directories are
// older than fineClock's window.
func settledTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mkfile(t, root, "top.txt", "t", 0o644)
	mkfile(t, root, "d/a", "a", 0o644)
	mkfile(t, root, "d/b", "b", 0o644)
	mkfile(t, root, "d/sub/c", "c", 0o644)
	mkfile(t, root, "d.x/e", "e", 0o644)
	mklink(t, root, "d/link", "a")
	time.Sleep(50 * time.Millisecond)
	return root
}

// without drops a path from a manifest, as if the previous walk had not
// seen it: a walk that takes the listing from it misses the path too,
// which shows whether the listing was reused.
func without(m *Manifest, path string) *Manifest {
	out := &Manifest{}
	for _, e := range m.Entries {
		if e.Path != path {
			out.Entries = append(out.Entries, e)
		}
	}
	return out
}

func TestSinceReusesProvedListings(t *testing.T) {
	root := settledTree(t)
	at := time.Now().UnixNano()
	prev := walk(t, root, WalkOptions{})
	now := walk(t, root, WalkOptions{Since: &Since{Manifest: prev, WalkNs: at, Clock: fineClock}})
	if !slices.EqualFunc(prev.Entries, now.Entries, func(a, b Entry) bool { return a.Path == b.Path && SameStat(a, b) }) {
		t.Fatalf("walk since an identical tree = %q, want %q", paths(now), paths(prev))
	}
	// d, d/sub and d.x: every directory but the root.
	if now.Reused() != 3 {
		t.Fatalf("reused %d listings, want 3", now.Reused())
	}
	// The proof is the directory's stat, not the names: a name the
	// previous walk lacked in a proved directory is not looked for.
	hidden := walk(t, root, WalkOptions{Since: &Since{Manifest: without(prev, "d/b"), WalkNs: at, Clock: fineClock}})
	if slices.Contains(paths(hidden), "d/b") {
		t.Fatalf("d/b was read from a directory whose listing was proved: %q", paths(hidden))
	}
	// Each entry is measured again: a write to a file moves no directory.
	mkfile(t, root, "d/a", "longer", 0o644)
	after := walk(t, root, WalkOptions{Since: &Since{Manifest: prev, WalkNs: at, Clock: fineClock}})
	for _, e := range after.Entries {
		if e.Path == "d/a" && e.Size != 6 {
			t.Fatalf("d/a measured with size %d after a rewrite, want 6", e.Size)
		}
	}
}

func TestSinceReadsWithinTheClocksStep(t *testing.T) {
	root := settledTree(t)
	at := time.Now().UnixNano()
	prev := without(walk(t, root, WalkOptions{}), "d/b")
	// d/b stands for a file added in the same timestamp step as the
	// previous walk read d: d's stat does not show it, and a clock that
	// cannot tell the step apart makes the walk read d again.
	for _, c := range []fsclock.Clock{minuteClock, {}, {Type: "vfat", StoredNs: 1, TickNs: 1, Measured: true, NoCtime: true}} {
		now := walk(t, root, WalkOptions{Since: &Since{Manifest: prev, WalkNs: at, Clock: c}})
		if !slices.Contains(paths(now), "d/b") {
			t.Errorf("clock %v: d/b missed, %d listings reused", c, now.Reused())
		}
	}
	// So does a previous walk that began before d last changed.
	now := walk(t, root, WalkOptions{Since: &Since{Manifest: prev, WalkNs: at - int64(time.Hour), Clock: fineClock}})
	if !slices.Contains(paths(now), "d/b") {
		t.Errorf("d/b missed since a walk an hour before d changed")
	}
}

func TestSinceSeesARecreatedDirectory(t *testing.T) {
	root := settledTree(t)
	at := time.Now().UnixNano()
	prev := walk(t, root, WalkOptions{})
	d := filepath.Join(root, "d")
	fi, err := os.Stat(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
	mkfile(t, root, "d/a", "a", 0o644)
	mkfile(t, root, "d/new", "n", 0o644)
	if err := os.Chtimes(d, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	again, err := Lstat(d)
	if err != nil {
		t.Fatal(err)
	}
	if again.MtimeNs != fi.ModTime().UnixNano() {
		t.Fatalf("mtime not restored: %d, want %d", again.MtimeNs, fi.ModTime().UnixNano())
	}
	now := walk(t, root, WalkOptions{Since: &Since{Manifest: prev, WalkNs: at, Clock: fineClock}})
	ps := paths(now)
	if !slices.Contains(ps, "d/new") || slices.Contains(ps, "d/b") {
		t.Fatalf("walk of a recreated d with its old mtime = %q, want d/new and no d/b", ps)
	}
}

func TestSinceListedAndSkip(t *testing.T) {
	root := settledTree(t)
	at := time.Now().UnixNano()
	full := walk(t, root, WalkOptions{})
	prev := without(full, "d/b")
	// A directory the caller does not vouch for is read.
	now := walk(t, root, WalkOptions{Since: &Since{Manifest: prev, WalkNs: at, Clock: fineClock, Listed: func(dir string) bool { return dir != "d" }}})
	if !slices.Contains(paths(now), "d/b") || now.Reused() != 2 {
		t.Fatalf("with d not listed: %q, %d reused; want d/b, 2 reused", paths(now), now.Reused())
	}
	// Skip applies to reused names as to read ones, and a walk says
	// where it left a name out.
	skip := func(rel string, isDir bool) bool { return rel == "d/a" }
	now = walk(t, root, WalkOptions{Skip: skip, Since: &Since{Manifest: full, WalkNs: at, Clock: fineClock}})
	if slices.Contains(paths(now), "d/a") || now.Reused() != 3 {
		t.Fatalf("skipping d/a: %q, %d reused", paths(now), now.Reused())
	}
	if un, ok := now.Listed(); !ok || !slices.Equal(un, []string{"d"}) {
		t.Fatalf("Listed() = %q, %v; want [d], true", un, ok)
	}
	if un, ok := full.Listed(); !ok || len(un) != 0 {
		t.Fatalf("Listed() of a walk that skipped nothing = %q, %v", un, ok)
	}
	if _, ok := (&Manifest{Entries: full.Entries}).Listed(); ok {
		t.Fatal("a built manifest says it is listed")
	}
}

func TestIndexSince(t *testing.T) {
	m := &Manifest{}
	for _, p := range []string{"a", "a.x", "a/b", "a/b-1", "a/b.txt", "a/b/x", "a/b/y/z", "a/b0", "a/c/deep/er", "a/d", "a0"} {
		m.Entries = append(m.Entries, Entry{Path: p, Kind: KindDir})
	}
	idx := indexSince(m.Entries)
	if d := idx["a"]; d == nil || d.self != 0 || !slices.Equal(d.names, []string{"b", "b-1", "b.txt", "b0", "d"}) {
		t.Fatalf("index of a = %+v", d)
	}
	if d := idx["a/c/deep"]; d == nil || d.self != -1 || !slices.Equal(d.names, []string{"er"}) {
		t.Fatalf("index of a/c/deep, which the manifest does not hold = %+v", d)
	}
	if d := idx[""]; d == nil || !slices.Equal(d.names, []string{"a", "a.x", "a0"}) {
		t.Fatalf("index of the root = %+v", d)
	}
}

// BenchmarkWalkSince measures a walk of a 3,000-file tree in 300
// directories that reads every listing ("read") or takes them from a walk
// of the unchanged tree ("since"); AIRLOCK_BENCH_TREE names a bigger one.
func BenchmarkWalkSince(b *testing.B) {
	root := os.Getenv("AIRLOCK_BENCH_TREE")
	if root == "" {
		root = benchTree(b, 300, 10)
	}
	time.Sleep(50 * time.Millisecond)
	at := time.Now().UnixNano()
	prev, err := Walk(b.Context(), root, WalkOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"read", "since"} {
		b.Run(name, func(b *testing.B) {
			opts := WalkOptions{}
			if name == "since" {
				opts.Since = &Since{Manifest: prev, WalkNs: at, Clock: fineClock}
			}
			reused := 0
			// CPU time too: on a loaded machine it says more than the
			// wall clock does.
			before := cpuTime()
			for b.Loop() {
				m, err := Walk(b.Context(), root, opts)
				if err != nil {
					b.Fatal(err)
				}
				reused = m.Reused()
			}
			b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(reused), "listings-taken/op")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestSinceReady(t *testing.T) {
	root := settledTree(t)
	at := time.Now().UnixNano()
	prev := walk(t, root, WalkOptions{})
	// Not ready: every directory is read.
	pending := make(chan struct{})
	if now := walk(t, root, WalkOptions{Since: &Since{Manifest: prev, WalkNs: at, Clock: fineClock, Ready: pending}}); now.Reused() != 0 {
		t.Fatalf("%d listings reused from a Since not ready", now.Reused())
	}
	ready := make(chan struct{})
	close(ready)
	if now := walk(t, root, WalkOptions{Since: &Since{Manifest: prev, WalkNs: at, Clock: fineClock, Ready: ready}}); now.Reused() != 3 {
		t.Fatalf("%d listings reused from a ready Since, want 3", now.Reused())
	}
	// Ready with no manifest: none to take.
	if now := walk(t, root, WalkOptions{Since: &Since{WalkNs: at, Clock: fineClock, Ready: ready}}); now.Reused() != 0 || len(now.Entries) != len(prev.Entries) {
		t.Fatalf("walk since no manifest: %d reused, %d entries", now.Reused(), len(now.Entries))
	}
}
