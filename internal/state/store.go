package state

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/airlockdev/airlock/internal/safefs"
)

// Store is an opened, checked state root.
type Store struct {
	dir string

	migrate    sync.Once // migrateLegacy
	migrateErr error
}

// DefaultDir resolves the state root: $AIRLOCK_STATE_DIR, else
// $XDG_STATE_HOME/airlock, else ~/.local/state/airlock. A relative
// $XDG_STATE_HOME is ignored, as the XDG base directory spec requires. A
// relative $AIRLOCK_STATE_DIR is refused: resolved against the working
// directory, it would name another state root from every other directory,
// and a `recover` run from there would find nothing of what a crash left
// while new transactions opened over the half-applied base.
func DefaultDir() (string, error) {
	if d := os.Getenv("AIRLOCK_STATE_DIR"); d != "" {
		if !filepath.IsAbs(d) {
			hint := ""
			if abs, err := filepath.Abs(d); err == nil {
				hint = " (from here that is " + abs + ")"
			}
			return "", fmt.Errorf("AIRLOCK_STATE_DIR=%q is a relative path, which names another state directory from every other working directory (a `recover` run elsewhere would not find what a crash left): set AIRLOCK_STATE_DIR to an absolute path%s", d, hint)
		}
		return filepath.Clean(d), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "airlock"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", fmt.Errorf("cannot locate the airlock state directory: no home directory (%v); set AIRLOCK_STATE_DIR", err)
	}
	return filepath.Join(home, ".local", "state", "airlock"), nil
}

// Open opens the state root at dir, creating it (and missing parents) with
// mode 0700 if needed, and refuses it if it cannot be trusted: the root
// itself (see checkDir) and its location (see checkAncestors).
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	// Checked before anything is created, so that a refused location is
	// left as it was, and again after creating it, for a directory
	// swapped meanwhile (where nothing was created, the first check is the
	// last word: checkDir below refuses a root swapped since).
	if err := checkAncestors(abs); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return nil, fmt.Errorf("create state directory %s: %w", abs, err)
		}
		if err := safefs.SyncDir(filepath.Dir(abs)); err != nil {
			return nil, err
		}
		if err := checkAncestors(abs); err != nil {
			return nil, err
		}
	}
	if err := checkDir(abs); err != nil {
		return nil, stateErr("state directory", abs, err)
	}
	// A root made by hand (mkdir) may be readable by others: it is the
	// user's own and not writable by others (checked above), so airlock
	// makes it private, as every directory it creates is.
	if fi, err := os.Lstat(abs); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(abs, 0o700); err != nil {
			return nil, fmt.Errorf("make state directory %s private (0700): %w", abs, err)
		}
	}
	s := &Store{dir: abs}
	for _, sub := range []string{"tx", "bases"} {
		if err := ensureDir(filepath.Join(abs, sub)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Dir is the absolute path of the state root.
func (s *Store) Dir() string { return s.dir }

func (s *Store) txRoot() string { return filepath.Join(s.dir, "tx") }

// ValidID reports whether id may name a transaction: 1 to 64 characters of
// A-Z, a-z, 0-9, '.', '_' and '-', and not "." or "..".
func ValidID(id string) error {
	bad := len(id) == 0 || len(id) > 64 || id == "." || id == ".."
	for i := 0; i < len(id) && !bad; i++ {
		c := id[i]
		bad = !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if bad {
		return fmt.Errorf("invalid transaction id %q: an id is 1 to 64 characters of A-Z a-z 0-9 . _ - and is not \".\" or \"..\"", id)
	}
	return nil
}

// NewID generates a transaction id from now (UTC) and 16 random bits, e.g.
// 20261129-190233-4f2a. Ids sort by creation time; Create detects the rare
// collision.
func NewID(now time.Time) string {
	var b [2]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Create makes the state directory of a new transaction. It fails if the id
// is taken, so two processes can never share a transaction by accident.
func (s *Store) Create(id string) (*Tx, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	if err := checkDir(s.txRoot()); err != nil {
		return nil, stateErr("state directory", s.txRoot(), err)
	}
	dir := filepath.Join(s.txRoot(), id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("transaction id %s already exists (%s); choose another id: %w", id, dir, fs.ErrExist)
		}
		return nil, fmt.Errorf("create transaction %s: %w", dir, err)
	}
	if err := safefs.SyncDir(s.txRoot()); err != nil {
		return nil, err
	}
	return &Tx{id: id, dir: dir}, nil
}

// Tx opens the state of an existing transaction after checking its
// directory. A missing transaction is an error matching fs.ErrNotExist.
func (s *Store) Tx(id string) (*Tx, error) {
	if err := ValidID(id); err != nil {
		return nil, err
	}
	t := &Tx{id: id, dir: filepath.Join(s.txRoot(), id)}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// IDs lists every transaction id in the store, sorted. Names that cannot be
// transaction ids are not airlock's and are skipped; entries that are not
// safe directories are listed, so that opening them reports the problem
// rather than hiding it.
func (s *Store) IDs() ([]string, error) {
	if err := checkDir(s.txRoot()); err != nil {
		return nil, stateErr("state directory", s.txRoot(), err)
	}
	entries, err := os.ReadDir(s.txRoot())
	if err != nil {
		return nil, fmt.Errorf("list transactions in %s: %w", s.txRoot(), err)
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if ValidID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// RemoveTx deletes a transaction's state (gc). The directory is first
// renamed into <root>/trash, so that a crash part-way leaves either the
// whole transaction or none of it visible; leftovers of earlier interrupted
// removals are swept as well. Removing a missing transaction is not an
// error. A mount point inside the state (a staged workspace still mounted)
// stops the removal: airlock never deletes through a mount.
func (s *Store) RemoveTx(id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	trash := filepath.Join(s.dir, "trash")
	t := &Tx{id: id, dir: filepath.Join(s.txRoot(), id)}
	var errs []error
	switch err := t.check(); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := refuseMounts(t.dir, 2); err != nil {
			return fmt.Errorf("remove transaction %s: %w", id, err)
		}
		if err := ensureDir(trash); err != nil {
			return err
		}
		var b [4]byte
		rand.Read(b[:])
		dst := filepath.Join(trash, id+"."+hex.EncodeToString(b[:]))
		if err := os.Rename(t.dir, dst); err != nil {
			return fmt.Errorf("remove transaction %s: %w", t.dir, err)
		}
		if err := safefs.SyncDir(s.txRoot()); err != nil {
			return err
		}
		if err := removeTree(dst); err != nil {
			return fmt.Errorf("remove transaction %s: %w", id, err)
		}
	}
	// Sweep what earlier, interrupted removals left behind.
	if err := checkDir(trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return stateErr("state directory", trash, err)
	}
	entries, err := os.ReadDir(trash)
	if err != nil {
		return fmt.Errorf("list %s: %w", trash, err)
	}
	for _, e := range entries {
		if err := removeTree(filepath.Join(trash, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove leftover transaction state: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Nested reports whether a and b are the same path or one lies inside the
// other, comparing cleaned paths component-wise: /a/b and /a/bc are not
// nested. It does not resolve symlinks; callers pass resolved paths.
func Nested(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	return a == b || within(a, b) || within(b, a)
}

// within reports whether p lies strictly inside dir.
func within(p, dir string) bool {
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(p, dir)
}
