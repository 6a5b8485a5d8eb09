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
	"syscall"

	"github.com/airlockdev/airlock/internal/safefs"
)

// Base is the per-base state directory: the commit lock, the in-flight
// apply marker and the head of the receipt chain.
type Base struct {
	path string // the base directory
	dir  string // its state directory
}

// baseRecord is base.json: which base a bases/<key> directory belongs to.
type baseRecord struct {
	Path   string `json:"path"`
	Device uint64 `json:"device"`
	Inode  uint64 `json:"inode"`
}

// BaseKey is the name of a base's state directory: the first 32 hex digits
// of the sha256 of its cleaned absolute path.
func BaseKey(absPath string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(absPath)))
	return hex.EncodeToString(sum[:])[:32]
}

// Base opens the state directory of the base at absPath, creating it if
// needed, and records the base's identity in base.json.
func (s *Store) Base(absPath string) (*Base, error) {
	if !filepath.IsAbs(absPath) {
		return nil, fmt.Errorf("base path %s is not absolute", absPath)
	}
	absPath = filepath.Clean(absPath)
	fi, err := os.Stat(absPath)
	if err != nil {
		return nil, fmt.Errorf("base %s: %w", absPath, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("base %s: cannot read its device and inode", absPath)
	}
	root := filepath.Join(s.dir, "bases")
	if err := checkDir(root); err != nil {
		return nil, stateErr("state directory", root, err)
	}
	b := &Base{path: absPath, dir: filepath.Join(root, BaseKey(absPath))}
	if err := ensureDir(b.dir); err != nil {
		return nil, err
	}
	want := baseRecord{Path: absPath, Device: uint64(st.Dev), Inode: uint64(st.Ino)}
	recPath := filepath.Join(b.dir, "base.json")
	data, err := readChecked(recPath)
	var have baseRecord
	switch {
	case err == nil:
		if json.Unmarshal(data, &have) == nil && have == want {
			return b, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	// base.json only informs humans and gc, so a stale or damaged one is
	// simply rewritten.
	out, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", recPath, err)
	}
	if err := safefs.WriteFile(recPath, append(out, '\n'), 0o600); err != nil {
		return nil, err
	}
	return b, nil
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

// SetInflight durably marks txID's apply as in flight over this base.
func (b *Base) SetInflight(txID string) error {
	if err := ValidID(txID); err != nil {
		return err
	}
	return b.writeLine("inflight", txID)
}

// ClearInflight durably removes the in-flight marker; clearing an absent
// marker is not an error.
func (b *Base) ClearInflight() error {
	if err := b.check(); err != nil {
		return err
	}
	path := filepath.Join(b.dir, "inflight")
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear %s: %w", path, err)
	}
	return safefs.SyncDir(b.dir)
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
	root := filepath.Join(s.dir, "bases")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list bases in %s: %w", root, err)
	}
	marks := map[string]string{}
	for _, e := range entries {
		b := &Base{dir: filepath.Join(root, e.Name())}
		if !e.IsDir() || b.check() != nil {
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
