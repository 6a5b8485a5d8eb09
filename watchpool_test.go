package airlock

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/manifest"
)

// TestWatchedRunPoolsItsTreeAsOfTheWatchsEnd: a watched run's tree is
// pooled with its stat facts proved as of the moment its watch stopped
// (every entry the watch did not name was as open measured it then), not
// as of when its open began measuring. The next open then keeps every
// directory as it is. Proved as of the open's start, a directory whose
// times the refresh had set (after that start) was never proved, so every
// warm run scrubbed and set again each directory of the tree, and read
// every listing of the pooled tree.
func TestWatchedRunPoolsItsTreeAsOfTheWatchsEnd(t *testing.T) {
	ctx := context.Background()
	base := newBaseDir(t, map[string]string{"a/b/f": "f\n", "a/g": "g\n", "c/h": "h\n"})
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{"a/b", "a", "c", "."} {
		must(t, os.Chtimes(filepath.Join(base, d), old, old))
	}
	s, err := OpenStore(filepath.Join(t.TempDir(), "state"))
	must(t, err)
	run := func() *Tx {
		t.Helper()
		tx, err := s.Open(ctx, OpenOptions{Base: base, ForRun: true})
		must(t, err)
		return tx
	}
	dirs := []string{"a", "a/b", "c"}
	facts := func(tx *Tx) map[string]manifest.Entry {
		t.Helper()
		out := map[string]manifest.Entry{}
		for _, d := range dirs {
			e, err := manifest.Lstat(filepath.Join(tx.Path(), d))
			must(t, err)
			out[d] = e
		}
		return out
	}
	settle := func(tx *Tx) {
		t.Helper()
		res, err := tx.Run(ctx, RunOptions{Argv: []string{"true"}})
		must(t, err)
		if !res.Watched {
			t.Skipf("the run was not watched here (%s): the case is not tested", res.Unwatched)
		}
	}
	settle(run())
	second := run()
	if second.rec.Staging == nil || second.rec.Staging.Recycled == nil {
		t.Fatalf("the second open did not recycle the first run's tree (%+v): the case is not tested", second.rec.Staging)
	}
	// Whatever the second open's refresh did to the directories lies
	// outside the state file system's timestamp window once it has
	// passed; the run's watch stops after that.
	clock := s.st().Clock()
	if !clock.Fine() {
		t.Skipf("the state's file system keeps coarse times (%s): the case is not tested", clock)
	}
	was := facts(second)
	for _, e := range was {
		for !clock.Proves(e.CtimeNs, time.Now().UnixNano()) {
			time.Sleep(time.Millisecond)
		}
	}
	settle(second)
	third := run()
	if third.rec.Staging == nil || third.rec.Staging.Recycled == nil {
		t.Fatalf("the third open did not recycle the second run's tree (%+v)", third.rec.Staging)
	}
	for d, e := range facts(third) {
		if w := was[d]; e.Ino != w.Ino || e.CtimeNs != w.CtimeNs {
			t.Errorf("the third open did not keep %s as pooled (inode %d, ctime %d; pooled: inode %d, ctime %d)", d, e.Ino, e.CtimeNs, w.Ino, w.CtimeNs)
		}
	}
	_, err = third.Discard(ctx, DiscardOptions{})
	must(t, err)
}
