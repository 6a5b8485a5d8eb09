package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/safefs"
)

// Base is the per-base state directory: the commit lock, the in-flight
// apply marker and the head of the receipt chain. It is named by the base
// directory's identity (its file system's and its inode: see Identity),
// not by a path, so every path that reaches the same directory (a bind
// mount, a second symlink-free spelling, the directory after a rename, the
// same disk mounted again under another device number) finds the same
// lock and marker.
type Base struct {
	path string   // the base directory, as the caller reached it
	dir  string   // its state directory
	id   Identity // its identity, the key of dir
	// recorded is the path base.json names when it differs from path: the
	// path the state was first written for (an alias, or the base before
	// it was moved).
	recorded string
}

// baseRecord is base.json: which base a bases/<key> directory belongs to.
// Born is the directory's birth time (ns since the epoch; 0 where the file
// system does not say): a new directory that reuses a deleted one's inode
// has another. FS is Identity.FS (absent in the records of earlier
// versions) and Device the device number last seen, which may change
// while FS stays.
type baseRecord struct {
	Path   string `json:"path"`
	FS     string `json:"fs,omitempty"`
	Device uint64 `json:"device"`
	Inode  uint64 `json:"inode"`
	Born   int64  `json:"born,omitempty"`
}

func (r baseRecord) identity() Identity { return Identity{FS: r.FS, Dev: r.Device, Ino: r.Inode} }

// BaseKey is the name earlier versions gave the state directory of the
// base with this device and inode: both in hex, 32 digits. Such a
// directory is moved to its Identity's Key on first use (migrateLegacy).
func BaseKey(dev, ino uint64) string {
	return fmt.Sprintf("%016x%016x", dev, ino)
}

// legacyKey is the name still earlier versions gave a base's state
// directory: the first 32 hex digits of the sha256 of its cleaned
// absolute path.
func legacyKey(absPath string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(absPath)))
	return hex.EncodeToString(sum[:])[:32]
}

// Base opens the state directory of the base at absPath, creating it if
// needed, and records the base's identity in base.json. The directory is
// found by the base's identity; see baseFor for what happens when
// base.json names another path or another directory.
func (s *Store) Base(absPath string) (*Base, error) {
	if !filepath.IsAbs(absPath) {
		return nil, fmt.Errorf("base path %s is not absolute", absPath)
	}
	absPath = filepath.Clean(absPath)
	id, err := Identify(absPath)
	if err != nil {
		return nil, fmt.Errorf("base %s: %w", absPath, unwrapPath(err))
	}
	want := baseRecord{Path: absPath, FS: id.FS, Device: id.Dev, Inode: id.Ino, Born: birthTime(absPath)}
	return s.baseFor(want, "", true)
}

// BaseOf opens the state directory of the base a transaction recorded at
// open: the directory with identity id, which absPath named then. Nothing
// is looked up through absPath, which may since name another directory or
// none (the base moved or was deleted) — except for a transaction an
// earlier version opened, which recorded no file system identity: while
// absPath still is its directory (device and inode) that is measured;
// otherwise its state is where that version kept it, or where an
// interrupted apply of it is indexed.
func (s *Store) BaseOf(absPath string, id Identity) (*Base, error) {
	if !filepath.IsAbs(absPath) {
		return nil, fmt.Errorf("base path %s is not absolute", absPath)
	}
	absPath = filepath.Clean(absPath)
	key := ""
	if id.FS == "" {
		if now, err := Identify(absPath); err == nil && now.Dev == id.Dev && now.Ino == id.Ino {
			id.FS = now.FS
		} else if key, err = s.legacyKeyOf(id); err != nil {
			return nil, err
		}
	}
	return s.baseFor(baseRecord{Path: absPath, FS: id.FS, Device: id.Dev, Inode: id.Ino}, key, false)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Path is the base directory.
func (b *Base) Path() string { return b.path }

// Dir is the base's state directory.
func (b *Base) Dir() string { return b.dir }

func (b *Base) check() error {
	return stateErr("base state directory", b.dir, checkDir(b.dir))
}

// Lock takes the base's commit lock, shared by every airlock process,
// waiting until ctx is done. The returned function releases it and may be
// called more than once.
func (b *Base) Lock(ctx context.Context) (unlock func(), err error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	return lockFile(ctx, filepath.Join(b.dir, "lock"))
}

// readLine reads a one-line marker file; ok is false when it is missing.
func (b *Base) readLine(name string) (string, bool, error) {
	if err := b.check(); err != nil {
		return "", false, err
	}
	path := filepath.Join(b.dir, name)
	data, err := readChecked(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	s, found := strings.CutSuffix(string(data), "\n")
	if !found || s == "" || strings.ContainsAny(s, " \t\r\n") {
		return "", false, &CorruptError{Path: path, Err: fmt.Errorf("want one non-empty line, have %q", data)}
	}
	return s, true, nil
}

func (b *Base) writeLine(name, value string) error {
	if err := b.check(); err != nil {
		return err
	}
	return safefs.WriteFile(filepath.Join(b.dir, name), []byte(value+"\n"), 0o600)
}

// Inflight reports the transaction whose apply journal is in flight over
// this base, if any. It is set before the first write to the base and
// cleared after the journal is retired, so a present marker after a crash
// means the base may be half-applied and must be recovered.
func (b *Base) Inflight() (txID string, ok bool, err error) {
	id, ok, err := b.readLine("inflight")
	if err != nil || !ok {
		return "", false, err
	}
	if err := ValidID(id); err != nil {
		return "", false, &CorruptError{Path: filepath.Join(b.dir, "inflight"), Err: err}
	}
	return id, true, nil
}

// SetInflight durably marks txID's apply as in flight over this base. The
// apply is indexed first (see indexInflight): a marker that the index
// does not name is never left behind, so that the index finds every apply
// in flight by its path or identity, whatever key the base is found by
// later.
func (b *Base) SetInflight(txID string) error {
	if err := ValidID(txID); err != nil {
		return err
	}
	if err := b.check(); err != nil {
		return err
	}
	if err := b.indexInflight(txID); err != nil {
		return err
	}
	return b.writeLine("inflight", txID)
}

// ClearInflight durably removes the in-flight marker, then its index
// entry; clearing an absent marker is not an error.
func (b *Base) ClearInflight() error {
	if err := b.check(); err != nil {
		return err
	}
	path := filepath.Join(b.dir, "inflight")
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear %s: %w", path, err)
	}
	if err := safefs.SyncDir(b.dir); err != nil {
		return err
	}
	return b.unindexInflight()
}

// Head is the digest of the last receipt committed to this base, or "" if
// none has been.
func (b *Base) Head() (string, error) {
	d, _, err := b.readLine("head")
	return d, err
}

// SetHead durably records digest as the last receipt committed to this base.
func (b *Base) SetHead(digest string) error {
	if digest == "" || strings.ContainsAny(digest, " \t\r\n") {
		return fmt.Errorf("set head of %s: invalid receipt digest %q", b.dir, digest)
	}
	return b.writeLine("head", digest)
}

// InflightMarks lists every in-flight marker in the store: the id each
// base names, mapped to that base's path (from its base.json; the state
// directory when that cannot be read). gc consults it for transactions
// whose own state is too damaged to say which base they belong to.
func (s *Store) InflightMarks() (map[string]string, error) {
	dirs, err := s.baseDirs()
	if err != nil {
		return nil, err
	}
	marks := map[string]string{}
	for _, dir := range dirs {
		b := &Base{dir: dir}
		if b.check() != nil {
			continue
		}
		b.path = b.dir
		if data, err := readChecked(filepath.Join(b.dir, "base.json")); err == nil {
			var rec baseRecord
			if json.Unmarshal(data, &rec) == nil && rec.Path != "" {
				b.path = rec.Path
			}
		}
		id, ok, err := b.Inflight()
		if err != nil {
			return nil, err
		}
		if ok {
			marks[id] = b.path
		}
	}
	return marks, nil
}

// TryLock takes the base's commit lock if it is free, and otherwise fails
// at once with an error matching ErrLocked.
func (b *Base) TryLock() (unlock func(), err error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	return tryLockFile(filepath.Join(b.dir, "lock"))
}

// PoolDir returns the directory of the base's pool of recycled staged
// trees, creating it (0700) if needed: one directory per pooled tree.
func (b *Base) PoolDir() (string, error) {
	if err := b.check(); err != nil {
		return "", err
	}
	dir := filepath.Join(b.dir, "pool")
	if err := ensureDir(dir); err != nil {
		return "", err
	}
	return dir, nil
}
