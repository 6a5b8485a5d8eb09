package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/safefs"
)

// indexDir, under the state root, indexes the applies in flight: one
// <key>.json per base state directory bases/<key> that marks one, naming
// the path the apply was made over and the base's identity. A base is
// found by its identity's key, but an apply in flight must also stop work
// over the same path when the key differs — the disk not mounted yet and
// its empty mount point opened instead, state an earlier version keyed by
// a device number the disk no longer has, a file system that has no
// identity of its own — and over the same identity under another key.
// Finding those by reading every base's state on each open would cost as
// much as there are bases; the index costs a read of a directory that is
// empty but while an apply is in flight or interrupted.
//
// The index is a superset of the markers: an entry is written before its
// marker and removed after it, so a crash between the two leaves an entry
// without a marker (stale: the marker decides, and the entry is dropped
// under the base's lock), never a marker without an entry.
const indexDir = "inflight"

// indexEntry is one file of indexDir.
type indexEntry struct {
	TxID string `json:"tx"`
	// Path is the path the apply was made over; Recorded the path
	// base.json names, when another (the path an alias was first opened
	// by).
	Path     string `json:"path"`
	Recorded string `json:"recorded,omitempty"`
	FS       string `json:"fs,omitempty"`
	Device   uint64 `json:"device"`
	Inode    uint64 `json:"inode"`
}

func (e indexEntry) identity() Identity { return Identity{FS: e.FS, Dev: e.Device, Ino: e.Inode} }

// root is the state root of a base state directory bases/<key>.
func (b *Base) root() string { return filepath.Dir(filepath.Dir(b.dir)) }

func (b *Base) key() string { return filepath.Base(b.dir) }

func indexPath(root, key string) string { return filepath.Join(root, indexDir, key+".json") }

func (b *Base) indexInflight(txID string) error {
	return writeIndex(b.root(), b.key(), indexEntry{TxID: txID, Path: b.path, Recorded: b.recorded, FS: b.id.FS, Device: b.id.Dev, Inode: b.id.Ino})
}

func writeIndex(root, key string, e indexEntry) error {
	if err := ensureDir(filepath.Join(root, indexDir)); err != nil {
		return err
	}
	out, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return safefs.WriteFile(indexPath(root, key), append(out, '\n'), 0o600)
}

func (b *Base) unindexInflight() error { return removeIndex(b.root(), b.key()) }

func removeIndex(root, key string) error {
	p := indexPath(root, key)
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("clear %s: %w", p, err)
	}
	return safefs.SyncDir(filepath.Dir(p))
}

// Elsewhere is an apply in flight that another base state directory than
// the one a base is found by marks, and that names the base's path or its
// identity.
type Elsewhere struct {
	// Base is the state directory that marks it; its Path is the path the
	// apply was made over.
	Base *Base
	TxID string
	// Recorded is the identity of the directory the apply was made over.
	Recorded Identity
}

// InflightNaming lists the applies in flight, marked in another state
// directory than except's (nil: any), that name path (the path the apply
// was made over, or the one its base.json records) or the identity id
// (Match is Same). With wait, each one's lock is taken in turn, so that a
// commit that is only running is waited for, not reported, and an index
// entry whose marker is gone is dropped; without, the markers are read as
// they are (for a caller that holds a base's lock already). A zero id
// matches by path alone.
func (s *Store) InflightNaming(ctx context.Context, path string, id Identity, except *Base, wait bool) ([]Elsewhere, error) {
	dir := filepath.Join(s.dir, indexDir)
	if err := checkDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, stateErr("state directory", dir, err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []Elsewhere
	for _, n := range names {
		key, ok := strings.CutSuffix(n.Name(), ".json")
		if !ok || !isKey(key) || (except != nil && key == except.key()) {
			continue
		}
		e, err := s.readIndex(key)
		if err != nil {
			return nil, err
		}
		if e.Path != path && e.Recorded != path && (id == Identity{} || e.identity().Match(id) != Same) {
			continue
		}
		b := &Base{path: e.Path, dir: filepath.Join(s.dir, "bases", key), id: e.identity(), recorded: e.Recorded}
		if _, err := os.Lstat(b.dir); errors.Is(err, fs.ErrNotExist) {
			continue // retired or removed with its marker: the entry is stale
		}
		txID, ok, err := b.inflightChecked(ctx, wait)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, Elsewhere{Base: b, TxID: txID, Recorded: e.identity()})
		}
	}
	return out, nil
}

// readIndex reads the index entry of key. One that does not decode
// (nothing airlock writes: it is replaced atomically) is taken from the
// base's base.json instead, which names the same base; only when neither
// can be read is it an error: an apply in flight that names nothing
// known must not be passed over.
func (s *Store) readIndex(key string) (indexEntry, error) {
	p := indexPath(s.dir, key)
	data, err := readChecked(p)
	if err != nil {
		return indexEntry{}, err
	}
	var e indexEntry
	if json.Unmarshal(data, &e) == nil && e.Path != "" {
		return e, nil
	}
	rec, err := readRecord(filepath.Join(s.dir, "bases", key, "base.json"))
	if err != nil {
		return indexEntry{}, err
	}
	if rec.Path == "" {
		return indexEntry{}, &CorruptError{Path: p, Err: errors.New("the index entry of an apply in flight does not decode, nor does its base's base.json: run `airlock recover` in the base it was made over")}
	}
	return indexEntry{Path: rec.Path, FS: rec.FS, Device: rec.Device, Inode: rec.Inode}, nil
}

// inflightChecked reads b's marker, under its lock when wait is set: then
// an index entry without a marker is removed.
func (b *Base) inflightChecked(ctx context.Context, wait bool) (string, bool, error) {
	if !wait {
		return b.Inflight()
	}
	unlock, err := b.Lock(ctx)
	if err != nil {
		return "", false, err
	}
	defer unlock()
	id, ok, err := b.Inflight()
	if err != nil || ok {
		return id, ok, err
	}
	return "", false, b.unindexInflight()
}
