package pool

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/running"
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
	rootID := FileID{Dev: root.Dev, Ino: root.Ino}
	return Settled{
		Tx: id, Dir: dir, Base: manifest.Bytes(base), Opened: time.Now(),
		Root: rootID, Walked: walked, WalkNs: walkNs, WalkedRoot: rootID,
		Source: Source(res.Base, res.Staged, walked), SourceWalkNs: res.WalkNs,
	}
}

// TestPutPoolsOnlyAccountedTrees: a tree whose transaction's processes
// are not accounted for (not contained) is never pooled; one that is, is
// pooled, listed, kept pooled while a command runs that started before a
// quiet moment, and made the next workspace by Take once none runs, which
// empties the pool.
func TestPutPoolsOnlyAccountedTrees(t *testing.T) {
	base := t.TempDir()
	writeAll(t, filepath.Join(base, "f"), "base\n")
	dir := t.TempDir()
	commands := running.New(filepath.Join(t.TempDir(), "running"))

	s := settled(t, base, "unaccounted")
	s.Running = commands
	if Put(t.Context(), dir, s) {
		t.Fatal("Put pooled a tree whose processes nobody accounted for")
	}
	if _, err := os.Stat(s.Dir); err != nil {
		t.Fatalf("the refused tree is gone from where it was: %v", err)
	}
	if n, _ := Usage(dir); n != 0 {
		t.Fatalf("the pool holds %d trees after a refusal", n)
	}

	// A command of another transaction runs across the settle: it could
	// hold the tree.
	other, err := commands.Start("other")
	must(t, err)
	s = settled(t, base, "contained")
	s.Contained, s.Running = true, commands
	if !Put(t.Context(), dir, s) {
		t.Fatal("Put refused a contained tree")
	}
	slots := Slots(dir)
	if len(slots) != 1 || slots[0].Err != nil || slots[0].Record.Tx != "contained" || !slots[0].Record.Contained || slots[0].Record.Quiet == nil {
		t.Fatalf("the pool lists %+v, want the one contained tree, marked", slots)
	}

	txDir := t.TempDir()
	req := clocked(stage.Request{Base: base, Dir: filepath.Join(txDir, "staged")})
	if res, _, why := Take(t.Context(), dir, txDir, req, commands, nil, nil); res != nil || why == "" {
		t.Fatalf("Take reused a tree while a command that ran across its settle still runs (why %q)", why)
	}
	if n, _ := Usage(dir); n != 1 {
		t.Fatalf("the pool holds %d trees after a Take that waits for a quiet moment, want the tree kept", n)
	}
	other.Done()
	res, used, why := Take(t.Context(), dir, txDir, req, commands, nil, nil)
	if res == nil {
		t.Fatalf("Take made nothing: %s", why)
	}
	if used.From != "contained" || used.Kept == 0 {
		t.Errorf("Take reused %+v, want the pooled tree with its entries kept", used)
	}
	if got, err := os.ReadFile(filepath.Join(req.Dir, "f")); err != nil || string(got) != "base\n" {
		t.Errorf("the workspace holds %q (%v), want the base's bytes", got, err)
	}
	if n, _ := Usage(dir); n != 0 {
		t.Errorf("the pool still holds %d trees after Take", n)
	}
}
