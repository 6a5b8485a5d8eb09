package pool

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/watchd"
)

// benchTree writes a tree shaped like a node_modules: many small
// directories of a few small files each.
func benchTree(b *testing.B, dirs, perDir int) string {
	b.Helper()
	base := filepath.Join(b.TempDir(), "base")
	for d := range dirs {
		dir := filepath.Join(base, "node_modules", fmt.Sprintf("pkg%03d", d/10), fmt.Sprintf("lib%d", d%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range perDir {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.js", f)), []byte("module.exports = 1\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return base
}

// BenchmarkRefresh measures the refresh of a pooled tree that nothing
// changed, on a 300-directory, 3,000-file tree: what a second `airlock
// run` pays before its command starts. "read" lists every directory of
// both walks; "taken" takes the names of those whose stat proves them
// unchanged from the pooled manifests (Pooled.Listed).
func BenchmarkRefresh(b *testing.B) {
	for _, listed := range []bool{false, true} {
		name := "read"
		if listed {
			name = "taken"
		}
		b.Run(name, func(b *testing.B) {
			base, dir, c, req, res := benchStaged(b)
			var err error
			// Recycled twice before the timer starts: the tree's
			// directories are then the ones a steady pool holds.
			for range 2 {
				time.Sleep(time.Duration(c.WindowNs()) + 10*time.Millisecond)
				if res, _, err = Refresh(b.Context(), req, benchSettle(b, dir, base, res, listed)); err != nil {
					b.Fatal(err)
				}
			}
			var done *Refreshed
			// CPU time too: on a loaded machine it says more than the
			// wall clock does.
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				p := benchSettle(b, dir, base, res, listed)
				before := cpuTime()
				b.StartTimer()
				if res, done, err = Refresh(b.Context(), req, p); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += cpuTime() - before
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(done.BaseListings+done.TreeListings), "listings-taken/op")
			b.ReportMetric(float64(done.Copied), "copied/op")
		})
	}
}

// benchStaged stages a copy of a 300-directory, 3,000-file tree: its
// base, staged directory, clock, request and result.
func benchStaged(b *testing.B) (base, dir string, c fsclock.Clock, req stage.Request, res *stage.Result) {
	b.Helper()
	base = benchTree(b, 300, 10)
	dir = filepath.Join(b.TempDir(), "staged")
	c, err := testClock()
	if err != nil {
		b.Fatal(err)
	}
	req = stage.Request{Base: base, Dir: dir, StateClock: c, BaseClock: c}
	bk, err := stage.Get(stage.Copy)
	if err != nil {
		b.Fatal(err)
	}
	if res, err = bk.Stage(b.Context(), req); err != nil {
		b.Fatal(err)
	}
	return base, dir, c, req, res
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchSettle pools the refreshed tree at dir as a settling transaction
// would (settle, for a benchmark).
func benchSettle(b *testing.B, dir, base string, res *stage.Result, listed bool) Pooled {
	walkNs := time.Now().UnixNano()
	walked, err := manifest.Walk(b.Context(), dir, manifest.WalkOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := changeset.Diff(b.Context(), changeset.Input{Base: res.Base, StagedOpen: res.Staged, Staged: walked, BaseDir: base, StagedDir: dir}); err != nil {
		b.Fatal(err)
	}
	src := Source(res.Base, res.Staged, walked)
	p := Pooled{
		Tree: func() (*manifest.Manifest, error) { return walked, nil }, TreeWalkNs: walkNs,
		Source: func() (*manifest.Manifest, error) { return src, nil }, SourceWalkNs: res.WalkNs,
	}
	if listed {
		p.Unlisted, p.Listed = src.Listed()
	}
	return p
}

// BenchmarkRefreshWatched is BenchmarkRefresh where the state root's watch
// daemon vouches for both trees, naming nothing (a warm run in an agent's
// loop): "patched" measures only what the watches name over the pooled
// manifests (Refresh with empty TreeChanges and BaseChanges), "unchanged"
// takes a tree exactly as its open staged it as it is (stage.Unchanged,
// pool's exact path), setting its root alone.
func BenchmarkRefreshWatched(b *testing.B) {
	for _, name := range []string{"patched", "unchanged"} {
		b.Run(name, func(b *testing.B) {
			base, dir, c, req, res := benchStaged(b)
			var err error
			time.Sleep(time.Duration(c.WindowNs()) + 10*time.Millisecond)
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				p := benchSettle(b, dir, base, res, true)
				baseM := &manifest.Manifest{Entries: slices.Clone(res.Base.Entries)}
				tree, _ := p.Tree()
				p.TreeChanges, p.BaseChanges = &watchd.Changes{}, &watchd.Changes{}
				p.Base = func() (*manifest.Manifest, error) { return baseM, nil }
				before := cpuTime()
				b.StartTimer()
				if name == "patched" {
					res, _, err = Refresh(b.Context(), req, p)
				} else {
					res, _, _, err = stage.Unchanged(b.Context(), req, baseM, tree)
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += cpuTime() - before
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
