package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/testbin"
)

// noiseSkip stands for the agent-noise excludes, which the settling walk
// leaves out.
func noiseSkip(rel string, isDir bool) bool {
	return strings.HasPrefix(rel[strings.LastIndexByte(rel, '/')+1:], ".aider")
}

// testClock is the timestamp clock of the file system the tests' trees
// are on (the temporary directory's), as airlock would measure it.
var testClock = sync.OnceValues(func() (fsclock.Clock, error) { return fsclock.Measure(os.TempDir()) })

// tclock is testClock, or the test fails.
func tclock(t *testing.T) fsclock.Clock {
	t.Helper()
	c, err := testClock()
	must(t, err)
	return c
}

// clocked gives req the clocks of the tests' file system.
func clocked(req stage.Request) stage.Request {
	c, err := testClock()
	if err != nil {
		panic(err)
	}
	req.StateClock, req.BaseClock = c, c
	return req
}

// pool stages base into a new directory, lets change play the command,
// and pools the result as a settling transaction would: its walk, the
// settling diff over it, then PoolSource.
func pool(t *testing.T, base string, change func(dir string)) (string, Pooled) {
	t.Helper()
	dir := stageDir(t)
	res, err := copyStage(t, clocked(stage.Request{Base: base, Dir: dir, Skip: skipExcluded}))
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(dir)
	}
	walkNs := time.Now().UnixNano()
	walked, err := manifest.Walk(t.Context(), dir, manifest.WalkOptions{Skip: noiseSkip})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := changeset.Diff(t.Context(), changeset.Input{Base: res.Base, StagedOpen: res.Staged, Staged: walked, BaseDir: base, StagedDir: dir}); err != nil {
		t.Fatal(err)
	}
	src := Source(res.Base, res.Staged, walked)
	unlisted, listed := src.Listed()
	return dir, Pooled{
		Tree: func() (*manifest.Manifest, error) { return walked, nil }, TreeWalkNs: walkNs,
		Source: func() (*manifest.Manifest, error) { return src, nil }, SourceWalkNs: res.WalkNs,
		Ignore: noiseSkip, Listed: listed, Unlisted: unlisted,
	}
}

// TestRefreshMatchesFreshCopy: a pooled tree that a command changed,
// refreshed to a base that changed too, is what staging afresh makes:
// every path, type, mode, mtime, byte and target, with no inode shared
// with the base or within the tree, and manifests that say so.
func TestRefreshMatchesFreshCopy(t *testing.T) {
	for _, settle := range []bool{false, true} {
		name := "base measured within a step (bytes compared)"
		if settle {
			name = "base measured later (stat decides)"
		}
		t.Run(name, func(t *testing.T) {
			base := buildTree(t)
			if settle {
				// Until the clock proves every base ctime.
				waitProven(t, base)
			}
			dir, p := pool(t, base, func(dir string) {
				writeAll(t, filepath.Join(dir, "one"), "changed by the command")
				writeAll(t, filepath.Join(dir, "added.txt"), "added by the command")
				must(t, os.Remove(filepath.Join(dir, "exec.sh")))
				must(t, os.Chmod(filepath.Join(dir, "secret"), 0o644))
				must(t, os.Remove(filepath.Join(dir, "empty")))
				must(t, os.MkdirAll(filepath.Join(dir, "empty/x"), 0o755))
				must(t, os.Remove(filepath.Join(dir, "rel-link")))
				must(t, os.Symlink("elsewhere", filepath.Join(dir, "rel-link")))
				// A hard link the command made inside the tree.
				must(t, os.Link(filepath.Join(dir, "big.bin"), filepath.Join(dir, "a/hard")))
				must(t, os.MkdirAll(filepath.Join(dir, "node_modules/new"), 0o755))
				writeAll(t, filepath.Join(dir, "a/b/new.log"), "excluded, but made by the command")
				must(t, os.Chmod(filepath.Join(dir, "a/b/c"), 0o700))
				// Facts no manifest holds: an extended attribute on a
				// directory, and the root's mode.
				must(t, unix.Lsetxattr(filepath.Join(dir, "a"), "user.airlock-test", []byte("left by the command"), 0))
				must(t, os.Chmod(dir, 0o700))
			})
			// The base moves on while the tree waits in the pool.
			writeAll(t, filepath.Join(base, "a/b/c/d/deep.txt"), "deep, changed in the base\n")
			writeAll(t, filepath.Join(base, "newbase.txt"), "new in the base\n")
			must(t, os.Remove(filepath.Join(base, "with space/file x")))
			must(t, os.Remove(filepath.Join(base, "dangling")))
			writeAll(t, filepath.Join(base, "dangling"), "a file now\n")
			must(t, os.MkdirAll(filepath.Join(base, "nd/x"), 0o755))
			// Agent noise that appeared after the settling walk is no sign of
			// a late writer, and is not staged.
			writeAll(t, filepath.Join(dir, ".aider.chat"), "noise")

			res, done, err := Refresh(t.Context(), clocked(stage.Request{Base: base, Dir: dir, Skip: skipExcluded}), p)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := unix.Lgetxattr(filepath.Join(dir, "a"), "user.airlock-test", make([]byte, 64)); err == nil {
				t.Errorf("the command's extended attribute on a directory survived the refresh (%d bytes)", n)
			}
			sameAsFresh(t, base, dir, res)
			if done.Copied == 0 || done.Kept == 0 || done.Removed == 0 {
				t.Errorf("refresh kept %d, copied %d, removed %d: want some of each", done.Kept, done.Copied, done.Removed)
			}
			if settle && done.Copied > 12 {
				t.Errorf("refresh copied %d entries; only the few the command and the base changed differ", done.Copied)
			}
		})
	}
}

// sameAsFresh checks that dir, refreshed from base (res), is what staging
// base afresh makes: every path, type, mode, mtime, byte and target, with
// no inode shared with the base or within the tree, and manifests that say
// so.
func sameAsFresh(t *testing.T, base, dir string, res *stage.Result) {
	t.Helper()
	fresh := stageDir(t)
	want, err := copyStage(t, stage.Request{Base: base, Dir: fresh, Skip: skipExcluded})
	if err != nil {
		t.Fatal(err)
	}
	got, exp := facts(t, dir, nil), facts(t, fresh, nil)
	for path, e := range exp {
		g, ok := got[path]
		if !ok {
			t.Errorf("%q: missing from the refreshed tree", path)
			continue
		}
		if g.Type != e.Type || g.Mode != e.Mode || g.Mtime != e.Mtime || g.Data != e.Data {
			t.Errorf("%q: refreshed %v %o mtime %d %q, fresh copy %v %o mtime %d %q", path, g.Type, g.Mode, g.Mtime, short(g.Data), e.Type, e.Mode, e.Mtime, short(e.Data))
		}
	}
	for path := range got {
		if _, ok := exp[path]; !ok {
			t.Errorf("%q: in the refreshed tree, not in a fresh copy", path)
		}
	}
	// No inode shared within the tree or with the base.
	seen := map[uint64]string{}
	baseFacts := facts(t, base, nil)
	for path, g := range got {
		if g.Type.IsDir() {
			continue
		}
		if other, ok := seen[g.Ino]; ok {
			t.Errorf("%q and %q share an inode in the refreshed tree", path, other)
		}
		seen[g.Ino] = path
		if b, ok := baseFacts[path]; ok && b.Ino == g.Ino {
			t.Errorf("%q shares its inode with the base", path)
		}
	}
	// The manifests are what staging afresh would have recorded.
	if len(res.Base.Entries) != len(want.Base.Entries) || len(res.Staged.Entries) != len(want.Staged.Entries) {
		t.Fatalf("manifests: %d base and %d staged entries, fresh %d and %d", len(res.Base.Entries), len(res.Staged.Entries), len(want.Base.Entries), len(want.Staged.Entries))
	}
	for i := range res.Base.Entries {
		if !manifest.SameStat(res.Base.Entries[i], want.Base.Entries[i]) {
			t.Errorf("base manifest entry %q = %+v, fresh %+v", res.Base.Entries[i].Path, res.Base.Entries[i], want.Base.Entries[i])
		}
	}
	for i, s := range res.Staged.Entries {
		now, err := manifest.Lstat(filepath.Join(dir, filepath.FromSlash(s.Path)))
		now.Path = s.Path
		if err != nil || !manifest.SameStat(now, s) {
			t.Errorf("staged manifest entry %q = %+v, the tree has %+v (%v)", s.Path, s, now, err)
		}
		if w := want.Staged.Entries[i]; !manifest.SameShape(s, w) || s.Size != w.Size || s.MtimeNs != w.MtimeNs {
			t.Errorf("staged manifest entry %q = %+v, fresh %+v", s.Path, s, w)
		}
	}
}

// waitProven waits until the tests' clock proves the stat of every entry
// of dir: until its window has passed since the newest ctime there.
func waitProven(t *testing.T, dir string) {
	t.Helper()
	c := tclock(t)
	m, err := manifest.Walk(t.Context(), dir, manifest.WalkOptions{})
	must(t, err)
	var newest int64
	for _, e := range m.Entries {
		newest = max(newest, e.CtimeNs)
	}
	for !c.Proves(newest, time.Now().UnixNano()) {
		time.Sleep(time.Duration(c.WindowNs()) / 4)
	}
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func writeAll(t *testing.T, p, s string) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(s), 0o644))
}

// TestRefreshRefusesWrittenTree: a pooled tree written after its
// transaction settled is never reused, whatever the write.
func TestRefreshRefusesWrittenTree(t *testing.T) {
	for name, write := range map[string]func(dir string){
		"modified": func(dir string) { writeAll(t, filepath.Join(dir, "one"), "late") },
		"added":    func(dir string) { writeAll(t, filepath.Join(dir, "late.txt"), "late") },
		"deleted":  func(dir string) { must(t, os.Remove(filepath.Join(dir, "secret"))) },
		"chmod":    func(dir string) { must(t, os.Chmod(filepath.Join(dir, "one"), 0o600)) },
	} {
		t.Run(name, func(t *testing.T) {
			base := buildTree(t)
			dir, p := pool(t, base, nil)
			write(dir)
			_, _, err := Refresh(t.Context(), stage.Request{Base: base, Dir: dir, Skip: skipExcluded}, p)
			if !errors.Is(err, ErrTouched) {
				t.Fatalf("Refresh after a late write: %v, want ErrTouched", err)
			}
		})
	}
}

// TestRefreshOnASecondsFS: on a file system that keeps whole seconds, a
// pooled tree changed after its pooled walk, in the second it was staged,
// shows every stat fact as that walk saw it. The refresh must still not
// keep what a fresh copy would not have: a file rewritten with its mtime
// put back (cp -p), a file given an extended attribute or a link outside
// the tree, a directory given an extended attribute.
func TestRefreshOnASecondsFS(t *testing.T) {
	mnt := testbin.SecondsFS(t)
	c, err := fsclock.Measure(mnt)
	must(t, err)
	if c.StoredNs != 1e9 {
		t.Fatalf("the seconds file system measures %s", c)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	for attempt := 1; ; attempt++ {
		base := filepath.Join(mnt, fmt.Sprintf("base%d", attempt))
		for _, p := range []string{"a", "b", "c", "d/e"} {
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(base, p)), 0o755))
			writeAll(t, filepath.Join(base, p), "base "+p+"\n")
			must(t, os.Chtimes(filepath.Join(base, p), old, old))
		}
		// Far enough into a second that the pooled walk comes clearly
		// after the staging, and what follows still falls in it.
		now := time.Now()
		next := now.Truncate(time.Second).Add(100 * time.Millisecond)
		if !next.After(now) {
			next = next.Add(time.Second)
		}
		time.Sleep(time.Until(next))
		dir := filepath.Join(mnt, fmt.Sprintf("staged%d", attempt))
		req := stage.Request{Base: base, Dir: dir, StateClock: c, BaseClock: c}
		res, err := copyStage(t, req)
		must(t, err)
		walkNs := time.Now().UnixNano()
		walked, err := manifest.Walk(t.Context(), dir, manifest.WalkOptions{})
		must(t, err)
		_, err = changeset.Diff(t.Context(), changeset.Input{Base: res.Base, StagedOpen: res.Staged, Staged: walked, BaseDir: base, StagedDir: dir})
		must(t, err)
		src := Source(res.Base, res.Staged, walked)
		unlisted, listed := src.Listed()
		p := Pooled{
			Tree: func() (*manifest.Manifest, error) { return walked, nil }, TreeWalkNs: walkNs,
			Source: func() (*manifest.Manifest, error) { return src, nil }, SourceWalkNs: res.WalkNs,
			Listed: listed, Unlisted: unlisted,
		}
		// After the pooled walk, in the same second.
		must(t, unix.Setxattr(filepath.Join(dir, "a"), "user.airlock-test", []byte("planted"), 0))
		outside := filepath.Join(mnt, fmt.Sprintf("outside%d", attempt))
		must(t, os.Link(filepath.Join(dir, "b"), outside))
		writeAll(t, filepath.Join(dir, "c"), "evil c\n") // the same size
		must(t, os.Chtimes(filepath.Join(dir, "c"), old, old))
		must(t, unix.Setxattr(filepath.Join(dir, "d"), "user.airlock-test", []byte("planted"), 0))
		same := true
		for _, rel := range []string{"a", "b", "c", "d"} {
			e, _ := walked.Lookup(rel)
			now, err := manifest.Lstat(filepath.Join(dir, rel))
			must(t, err)
			now.Path = rel
			same = same && manifest.SameStat(*e, now)
		}
		if !same {
			// The second rolled over: the stat shows the changes, which
			// is not the case under test. Again.
			if attempt == 5 {
				t.Fatal("staging and the changes did not fit in one second in 5 tries")
			}
			continue
		}
		if _, _, err := Refresh(t.Context(), req, p); err != nil {
			t.Fatal(err)
		}
		for _, rel := range []string{"a", "d"} {
			if _, err := unix.Getxattr(filepath.Join(dir, rel), "user.airlock-test", make([]byte, 64)); err == nil {
				t.Errorf("%s kept the extended attribute set after the pooled walk", rel)
			}
		}
		var st, ost unix.Stat_t
		must(t, unix.Stat(filepath.Join(dir, "b"), &st))
		must(t, unix.Stat(outside, &ost))
		if st.Ino == ost.Ino {
			t.Errorf("b is still the inode linked at %s: a write there reaches the next transaction", outside)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "c")); string(got) != "base c\n" {
			t.Errorf("c holds %q, not the base's bytes", got)
		}
		return
	}
}
