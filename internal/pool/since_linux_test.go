package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/testbin"
)

// settle plays a command on a refreshed tree and pools it again, as a
// settling transaction would: res is what opened it.
func settle(t *testing.T, base, dir string, res *stage.Result, change func(dir string)) Pooled {
	t.Helper()
	if change != nil {
		change(dir)
	}
	walkNs := time.Now().UnixNano()
	walked, err := manifest.Walk(t.Context(), dir, manifest.WalkOptions{Skip: noiseSkip})
	must(t, err)
	_, err = changeset.Diff(t.Context(), changeset.Input{Base: res.Base, StagedOpen: res.Staged, Staged: walked, BaseDir: base, StagedDir: dir})
	must(t, err)
	src := Source(res.Base, res.Staged, walked)
	unlisted, listed := src.Listed()
	if !listed {
		t.Fatal("the source of a refreshed tree does not say it is listed")
	}
	return Pooled{
		Tree: func() (*manifest.Manifest, error) { return walked, nil }, TreeWalkNs: walkNs,
		Source: func() (*manifest.Manifest, error) { return src, nil }, SourceWalkNs: res.WalkNs,
		Ignore: noiseSkip, Listed: listed, Unlisted: unlisted,
	}
}

// TestRefreshAgainTakesProvedListings: a tree recycled again takes the
// names of the directories whose stat proves them unchanged from the
// pooled manifests, the base's and the tree's, and is still exactly what
// a fresh copy is: a directory the command touched (noise in it, or
// deleted and made again with its old mtime) or one the base changed is
// read.
func TestRefreshAgainTakesProvedListings(t *testing.T) {
	base := buildTree(t)
	waitProven(t, base)
	dir, p := pool(t, base, nil)
	waitProven(t, dir)
	req := clocked(stage.Request{Base: base, Dir: dir, Skip: skipExcluded})
	res, done, err := Refresh(t.Context(), req, p)
	must(t, err)
	if done.BaseListings == 0 {
		t.Errorf("first refresh took no base listing from the pooled source")
	}
	sameAsFresh(t, base, dir, res)
	// That refresh made the tree's directories again as fresh ones (the
	// pooled walk came right after staging, within the clock's step of
	// their ctimes); once it is recycled again, they are older.
	waitProven(t, dir)
	res, _, err = Refresh(t.Context(), req, settle(t, base, dir, res, nil))
	must(t, err)

	// The command: noise in a directory, a directory made again with its
	// old mtime, a file rewritten in place.
	p = settle(t, base, dir, res, func(dir string) {
		writeAll(t, filepath.Join(dir, "a/b/.aider.chat"), "noise")
		sub := filepath.Join(dir, "ro/sub")
		fi, err := os.Stat(sub)
		must(t, err)
		must(t, os.Chmod(filepath.Join(dir, "ro"), 0o755))
		must(t, os.Chmod(sub, 0o755))
		must(t, os.RemoveAll(sub))
		must(t, os.Mkdir(sub, 0o555|0o200))
		writeAll(t, filepath.Join(sub, "f2"), "nested in read-only dir\n")
		writeAll(t, filepath.Join(sub, "planted"), "made by the command")
		must(t, os.Chmod(sub, fi.Mode().Perm()))
		must(t, os.Chtimes(sub, fi.ModTime(), fi.ModTime()))
		must(t, os.Chmod(filepath.Join(dir, "ro"), 0o555))
		writeAll(t, filepath.Join(dir, "sticky/f"), "rewritten")
	})
	// The base moves on: a file added in one directory, one rewritten in
	// another.
	writeAll(t, filepath.Join(base, "with space/added"), "new in the base\n")
	writeAll(t, filepath.Join(base, "a/b/c/d/deep.txt"), "deep, changed\n")
	waitProven(t, dir)
	res, done, err = Refresh(t.Context(), req, p)
	must(t, err)
	t.Logf("third refresh: %+v", *done)
	if done.TreeListings == 0 || done.BaseListings == 0 {
		t.Errorf("third refresh took %d tree and %d base listings from the pooled manifests, want some of each", done.TreeListings, done.BaseListings)
	}
	sameAsFresh(t, base, dir, res)
}

// TestRefreshSeesANameAddedInTheStep: on a file system that keeps whole
// seconds, a name added to a directory in the second the directory last
// changed, after the walk that listed it, leaves the directory's stat as
// that walk saw it. Its listing must then be read, not taken from the
// pooled manifests: in the tree, the name is a late write (the tree is not
// reused); in the base, it is staged.
func TestRefreshSeesANameAddedInTheStep(t *testing.T) {
	mnt := testbin.SecondsFS(t)
	c, err := fsclock.Measure(mnt)
	must(t, err)
	for _, side := range []string{"tree", "base"} {
		t.Run(side, func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				// Early in a second, so that all of it fits in one.
				now := time.Now()
				next := now.Truncate(time.Second).Add(50 * time.Millisecond)
				if !next.After(now) {
					next = next.Add(time.Second)
				}
				time.Sleep(time.Until(next))
				base := filepath.Join(mnt, fmt.Sprintf("%s-base%d", side, attempt))
				must(t, os.MkdirAll(filepath.Join(base, "d"), 0o755))
				writeAll(t, filepath.Join(base, "d/a"), "a\n")
				dir := filepath.Join(mnt, fmt.Sprintf("%s-staged%d", side, attempt))
				req := stage.Request{Base: base, Dir: dir, StateClock: c, BaseClock: c}
				res, err := copyStage(t, req)
				must(t, err)
				p := settle(t, base, dir, res, nil)
				in := dir
				if side == "base" {
					in = base
				}
				before, err := manifest.Lstat(filepath.Join(in, "d"))
				must(t, err)
				writeAll(t, filepath.Join(in, "d/late"), "late\n")
				after, err := manifest.Lstat(filepath.Join(in, "d"))
				must(t, err)
				if !manifest.SameStat(before, after) {
					// The second rolled over: not the case under test.
					if attempt == 5 {
						t.Fatal("the walk and the late name did not fit in one second in 5 tries")
					}
					continue
				}
				res, _, err = Refresh(t.Context(), req, p)
				if side == "tree" {
					if !errors.Is(err, ErrTouched) {
						t.Fatalf("Refresh after a name added in the step of the pooled walk: %v, want ErrTouched", err)
					}
					return
				}
				must(t, err)
				if _, ok := res.Base.Lookup("d/late"); !ok {
					t.Fatal("d/late, added to the base in the step of its walk at open, is missing from the refreshed base manifest")
				}
				if _, err := os.Stat(filepath.Join(dir, "d/late")); err != nil {
					t.Fatalf("d/late not staged: %v", err)
				}
				return
			}
		})
	}
}
