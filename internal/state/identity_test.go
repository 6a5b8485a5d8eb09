package state

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestIdentityMatch(t *testing.T) {
	ext := "fsid-0000ef53-c26804e01e9dd467"
	for _, c := range []struct {
		name     string
		rec, now Identity
		want     Match
	}{
		{"stable, the device number changed", Identity{FS: ext, Dev: 0x700, Ino: 2}, Identity{FS: ext, Dev: 0x701, Ino: 2}, Same},
		{"stable, another file system", Identity{FS: ext, Dev: 0x700, Ino: 2}, Identity{FS: "fsid-0000ef53-0000000000000001", Dev: 0x700, Ino: 2}, Other},
		{"stable, another inode", Identity{FS: ext, Dev: 0x700, Ino: 2}, Identity{FS: ext, Dev: 0x700, Ino: 3}, Other},
		{"earlier version's, same device", Identity{Dev: 0x700, Ino: 2}, Identity{FS: ext, Dev: 0x700, Ino: 2}, Same},
		{"earlier version's, another device", Identity{Dev: 0x700, Ino: 2}, Identity{FS: ext, Dev: 0x701, Ino: 2}, Unknown},
		{"device only, another device", Identity{FS: devFS(0x1a), Dev: 0x1a, Ino: 5}, Identity{FS: devFS(0x1b), Dev: 0x1b, Ino: 5}, Unknown},
		{"device only, another inode", Identity{FS: devFS(0x1a), Dev: 0x1a, Ino: 5}, Identity{FS: devFS(0x1b), Dev: 0x1b, Ino: 6}, Other},
	} {
		if got := c.rec.Match(c.now); got != c.want {
			t.Errorf("%s: %v.Match(%v) = %d, want %d", c.name, c.rec, c.now, got, c.want)
		}
	}
}

func TestIsKey(t *testing.T) {
	for name, want := range map[string]bool{
		"fsid-0000ef53-c26804e01e9dd467-0000000000000002":                 true,
		"uuid-58465342-3bf05c13f28b45e180eb9407e7212b4f-0000000000000080": true,
		"dev-000000000000001a-0000000000000001":                           true,
		"0000000000000700" + "0000000000000002":                           true, // BaseKey
		"retired":                                                         false,
		"fsid-":                                                           false,
		"fsid-../x":                                                       false,
		"FSID-0000ef53-c26804e01e9dd467-0000000000000002":                 false,
	} {
		if isKey(name) != want {
			t.Errorf("isKey(%q) = %v, want %v", name, !want, want)
		}
	}
}

// TestInflightIsIndexed: an apply in flight is indexed by its path and
// identity before its marker is written and unindexed after it is
// cleared; another state directory finds it by either, and an index entry
// whose marker is gone (a crash between the two) is dropped under the
// base's lock, never reported.
func TestInflightIsIndexed(t *testing.T) {
	s, b := newBase(t)
	ctx := context.Background()
	if err := b.SetInflight("t1"); err != nil {
		t.Fatal(err)
	}
	entry := indexPath(s.Dir(), b.key())
	data, err := os.ReadFile(entry)
	if err != nil {
		t.Fatalf("no index entry for the apply in flight: %v", err)
	}
	var e indexEntry
	if err := json.Unmarshal(data, &e); err != nil || e.TxID != "t1" || e.Path != b.Path() || e.identity() != b.Identity() {
		t.Fatalf("index entry %s = %+v (%v), want t1 over %s, %v", entry, e, err, b.Path(), b.Identity())
	}
	other := &Base{dir: filepath.Join(s.Dir(), "bases", "dev-0000000000000001-0000000000000001")}
	for _, c := range []struct {
		name string
		path string
		id   Identity
		want int
	}{
		{"by path", b.Path(), Identity{Dev: 1, Ino: 1}, 1},
		{"by identity", "/elsewhere", b.Identity(), 1},
		{"by path alone", b.Path(), Identity{}, 1},
		{"neither", "/elsewhere", Identity{FS: "fsid-0000ef53-0000000000000001", Ino: b.Identity().Ino}, 0},
	} {
		for _, wait := range []bool{false, true} {
			got, err := s.InflightNaming(ctx, c.path, c.id, other, wait)
			if err != nil || len(got) != c.want {
				t.Errorf("%s (wait %v): %+v, %v; want %d", c.name, wait, got, err, c.want)
			}
			if len(got) == 1 && (got[0].TxID != "t1" || got[0].Base.Dir() != b.Dir()) {
				t.Errorf("%s: found %+v, want t1 in %s", c.name, got[0], b.Dir())
			}
		}
	}
	if got, err := s.InflightNaming(ctx, b.Path(), b.Identity(), b, true); err != nil || len(got) != 0 {
		t.Errorf("the base's own state is reported as another's: %+v, %v", got, err)
	}

	// A crash after the marker was cleared, before the entry was: the
	// marker decides.
	if err := os.Remove(filepath.Join(b.Dir(), "inflight")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.InflightNaming(ctx, b.Path(), Identity{}, other, false); err != nil || len(got) != 0 {
		t.Errorf("a stale index entry is reported: %+v, %v", got, err)
	}
	if _, err := os.Stat(entry); err != nil {
		t.Errorf("the stale entry was dropped without the base's lock: %v", err)
	}
	if _, err := s.InflightNaming(ctx, b.Path(), Identity{}, other, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Errorf("the stale entry %s was kept under the base's lock: %v", entry, err)
	}

	if err := b.SetInflight("t2"); err != nil {
		t.Fatal(err)
	}
	if err := b.ClearInflight(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(entry); !os.IsNotExist(err) {
		t.Errorf("ClearInflight left the index entry %s: %v", entry, err)
	}
}

// TestDevInoStateMigrates: state an earlier version named by the base's
// device and inode moves to the identity's key, its apply in flight
// indexed under the new name; state whose base is not there stays, its
// apply in flight indexed so that its path finds it.
func TestDevInoStateMigrates(t *testing.T) {
	s := openStore(t)
	live, gone := t.TempDir(), filepath.Join(t.TempDir(), "gone")
	id, err := Identify(live)
	if err != nil {
		t.Fatal(err)
	}
	plant := func(path string, dev, ino uint64) string {
		dir := filepath.Join(s.Dir(), "bases", BaseKey(dev, ino))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		rec, _ := json.Marshal(baseRecord{Path: path, Device: dev, Inode: ino})
		for name, data := range map[string]string{"base.json": string(rec), "inflight": "t1\n", "head": "sha256:abc\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	liveOld := plant(live, id.Dev, id.Ino)
	goneOld := plant(gone, id.Dev+1, 7)

	b, err := s.Base(live)
	if err != nil {
		t.Fatal(err)
	}
	if b.Dir() != filepath.Join(s.Dir(), "bases", id.Key()) {
		t.Fatalf("base state at %s, want %s", b.Dir(), id.Key())
	}
	if _, err := os.Stat(liveOld); !os.IsNotExist(err) {
		t.Errorf("the earlier version's state %s was not moved: %v", liveOld, err)
	}
	if tx, ok, err := b.Inflight(); err != nil || !ok || tx != "t1" {
		t.Errorf("the moved state lost its marker: %q %v %v", tx, ok, err)
	}
	if head, err := b.Head(); err != nil || head != "sha256:abc" {
		t.Errorf("the moved state lost its receipt chain's head: %q %v", head, err)
	}
	if rec, _ := readRecord(filepath.Join(b.Dir(), "base.json")); rec.FS != id.FS {
		t.Errorf("the moved base.json does not record the file system: %+v", rec)
	}
	for key, want := range map[string]bool{id.Key(): true, filepath.Base(liveOld): false, filepath.Base(goneOld): true} {
		if _, err := os.Stat(indexPath(s.Dir(), key)); (err == nil) != want {
			t.Errorf("index entry of %s: %v, want it there: %v", key, err, want)
		}
	}
	found, err := s.InflightNaming(context.Background(), gone, Identity{}, nil, true)
	if err != nil || len(found) != 1 || found[0].Base.Dir() != goneOld || found[0].Recorded.Match(Identity{FS: id.FS, Dev: id.Dev + 2, Ino: 7}) != Unknown {
		t.Errorf("the apply in flight in state that could not be moved is not found by its path: %+v, %v", found, err)
	}
}
