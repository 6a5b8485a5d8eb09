package pool

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/holders"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/stage"
)

// settled stages base and settles it as a transaction whose command
// changed nothing: what Put is given (the Settled a Tx makes).
func settled(t *testing.T, base, id string) Settled {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	res, err := copyStage(t, clocked(stage.Request{Base: base, Dir: dir}))
	must(t, err)
	walkNs := time.Now().UnixNano()
	walked, err := manifest.Walk(t.Context(), dir, manifest.WalkOptions{})
	must(t, err)
	// The settling diff, which leaves on the walk the digests that prove
	// recently staged files untouched.
	_, err = changeset.Diff(t.Context(), changeset.Input{Base: res.Base, StagedOpen: res.Staged, Staged: walked, BaseDir: base, StagedDir: dir})
	must(t, err)
	root, err := manifest.Lstat(dir)
	must(t, err)
	rootID := holders.FileID{Dev: root.Dev, Ino: root.Ino}
	return Settled{
		Tx: id, Dir: dir, Base: manifest.Bytes(base), Opened: time.Now(),
		Root: rootID, Walked: walked, WalkNs: walkNs, WalkedRoot: rootID,
		Source: Source(res.Base, res.Staged, walked), SourceWalkNs: res.WalkNs,
	}
}

// TestPutPoolsOnlyAccountedTrees: a tree whose transaction's processes
// are not accounted for (neither contained nor looked for) is never
// pooled; one that is, is pooled, listed, and made the next workspace by
// Take, which empties the pool.
func TestPutPoolsOnlyAccountedTrees(t *testing.T) {
	base := t.TempDir()
	writeAll(t, filepath.Join(base, "f"), "base\n")
	dir := t.TempDir()

	s := settled(t, base, "unaccounted")
	if Put(t.Context(), dir, s) {
		t.Fatal("Put pooled a tree whose processes nobody accounted for")
	}
	if _, err := os.Stat(s.Dir); err != nil {
		t.Fatalf("the refused tree is gone from where it was: %v", err)
	}
	if n, _ := Usage(dir); n != 0 {
		t.Fatalf("the pool holds %d trees after a refusal", n)
	}

	s = settled(t, base, "scanned")
	s.Scanned = true
	if !Put(t.Context(), dir, s) {
		t.Fatal("Put refused a tree whose command left nothing running")
	}
	slots := Slots(dir)
	if len(slots) != 1 || slots[0].Err != nil || slots[0].Record.Tx != "scanned" || slots[0].Record.Contained {
		t.Fatalf("the pool lists %+v, want the one uncontained tree", slots)
	}

	txDir := t.TempDir()
	req := clocked(stage.Request{Base: base, Dir: filepath.Join(txDir, "staged")})
	res, used, why := Take(t.Context(), dir, txDir, req)
	if res == nil {
		t.Fatalf("Take made nothing: %s", why)
	}
	if used.From != "scanned" || used.Kept == 0 {
		t.Errorf("Take reused %+v, want the pooled tree with its entries kept", used)
	}
	if got, err := os.ReadFile(filepath.Join(req.Dir, "f")); err != nil || string(got) != "base\n" {
		t.Errorf("the workspace holds %q (%v), want the base's bytes", got, err)
	}
	if n, _ := Usage(dir); n != 0 {
		t.Errorf("the pool still holds %d trees after Take", n)
	}
}
