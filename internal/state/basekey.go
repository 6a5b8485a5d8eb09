package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/airlockdev/airlock/internal/safefs"
)

// retiredDir, under bases/, keeps the state of bases that are gone (their
// receipt chain, their originals, the journal of an apply that could not
// be recovered), moved there rather than deleted or inherited.
const retiredDir = "retired"

// StaleBaseError says that the state found under a directory's device and
// inode was written for another directory: one that has been deleted, and
// whose inode the file system gave to this one (their birth times differ).
// That state marks an apply in flight, which must not be inherited by the
// new directory nor silently dropped.
type StaleBaseError struct {
	Base *Base // the stale state, as it was written (Path is the old base)
	Old  baseRecord
	New  baseRecord
	TxID string // the apply in flight
}

func (e *StaleBaseError) Error() string {
	return fmt.Sprintf("the base state %s was written for the directory %s (created %s), which no longer exists: %s (created %s) is another directory that the file system gave its device and inode; an apply of transaction %s over %s was interrupted and never recovered, and it cannot be recovered into another directory: run `airlock recover --workdir %s` to clear it (the journal's backups, the only copy of what %s held, are kept)",
		e.Base.dir, e.Old.Path, bornString(e.Old.Born), e.New.Path, bornString(e.New.Born), e.TxID, e.Old.Path, e.New.Path, e.Old.Path)
}

func bornString(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000000000 UTC")
}

// baseFor finds (creating if needed) the state directory of the base want
// names, by its device and inode, and squares it with base.json. live says
// want was just measured at want.Path (Base); otherwise it comes from a
// transaction's record (BaseOf) and only the key is trusted.
//
// When base.json names another path, the directory is the same one reached
// another way (an alias: the recorded path still leads to it) or the same
// one moved (the recorded path is gone; its birth time, where the file
// system keeps one, agrees). A moved base's record follows it, unless an
// apply is in flight: then the record keeps the path the apply was made
// over, for the messages that name it. When the birth times differ, the
// state belongs to a deleted directory whose inode was reused: it is
// retired (moved aside, not inherited), or, when it marks an apply in
// flight, reported as a *StaleBaseError.
func (s *Store) baseFor(want baseRecord, live bool) (*Base, error) {
	root := filepath.Join(s.dir, "bases")
	if err := checkDir(root); err != nil {
		return nil, stateErr("state directory", root, err)
	}
	if err := s.migrateLegacy(); err != nil {
		return nil, err
	}
	b := &Base{path: want.Path, dir: filepath.Join(root, BaseKey(want.Device, want.Inode)), dev: want.Device, ino: want.Inode}
	if live {
		if err := s.checkLegacy(b); err != nil {
			return nil, err
		}
	}
	if err := ensureDir(b.dir); err != nil {
		return nil, err
	}
	recPath := filepath.Join(b.dir, "base.json")
	have, err := readRecord(recPath)
	if err != nil {
		return nil, err
	}
	if have.Path == "" || have.Device != want.Device || have.Inode != want.Inode {
		// Missing or damaged: base.json only informs humans and gc, so it
		// is simply (re)written.
		return b, writeRecord(recPath, want)
	}
	if !live {
		if have.Path != want.Path {
			b.recorded = have.Path
		}
		return b, nil
	}
	if have.Born != 0 && want.Born != 0 && have.Born != want.Born {
		return s.reused(b, have, want)
	}
	if have.Path == want.Path {
		if have.Born == 0 && want.Born != 0 {
			return b, writeRecord(recPath, want)
		}
		return b, nil
	}
	b.recorded = have.Path
	if sameDir(have.Path, want) {
		return b, nil // an alias: the record keeps the first path
	}
	if _, inflight, err := b.Inflight(); err != nil || inflight {
		return b, err
	}
	if want.Born == 0 {
		want.Born = have.Born
	}
	b.recorded = ""
	return b, writeRecord(recPath, want)
}

// reused handles state whose directory was deleted and whose inode now
// names the directory want: without an apply in flight the old state is
// retired and the new directory starts afresh.
func (s *Store) reused(b *Base, have, want baseRecord) (*Base, error) {
	old := &Base{path: have.Path, dir: b.dir, dev: b.dev, ino: b.ino}
	id, ok, err := old.Inflight()
	if err != nil {
		return nil, err
	}
	if ok {
		return nil, &StaleBaseError{Base: old, Old: have, New: want, TxID: id}
	}
	if _, err := old.Retire(); err != nil {
		return nil, err
	}
	if err := ensureDir(b.dir); err != nil {
		return nil, err
	}
	return b, writeRecord(filepath.Join(b.dir, "base.json"), want)
}

func sameDir(path string, want baseRecord) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Dev) == want.Device && uint64(st.Ino) == want.Inode
}

// readRecord reads base.json; a missing or undecodable one is the zero
// record, an unsafe one an error.
func readRecord(path string) (baseRecord, error) {
	var rec baseRecord
	data, err := readChecked(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rec, nil
	case err != nil:
		return rec, err
	}
	if json.Unmarshal(data, &rec) != nil {
		return baseRecord{}, nil
	}
	return rec, nil
}

func writeRecord(path string, rec baseRecord) error {
	out, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return safefs.WriteFile(path, append(out, '\n'), 0o600)
}

// Recorded is the path base.json names when it is not Path: the path the
// state was written for, through which an alias or a moved base was first
// opened. "" when they agree.
func (b *Base) Recorded() string { return b.recorded }

// Is reports whether this is the state of the directory with device dev
// and inode ino.
func (b *Base) Is(dev, ino uint64) bool { return b.dev == dev && b.ino == ino }

// Retire moves the base's whole state directory (lock, markers, receipt
// chain, originals) to bases/retired/<key>-<ns> and returns where. For a
// base that is gone: its state is kept for the user, never inherited by a
// directory that later gets its device and inode.
func (b *Base) Retire() (string, error) {
	if err := b.check(); err != nil {
		return "", err
	}
	bases := filepath.Dir(b.dir)
	rdir := filepath.Join(bases, retiredDir)
	if err := ensureDir(rdir); err != nil {
		return "", err
	}
	dst := filepath.Join(rdir, filepath.Base(b.dir)+"-"+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := os.Rename(b.dir, dst); err != nil {
		return "", fmt.Errorf("retire base state %s: %w", b.dir, err)
	}
	if err := safefs.SyncDir(bases); err != nil {
		return "", err
	}
	return dst, safefs.SyncDir(rdir)
}

// BasesRecordedAt lists the state directories whose base.json names
// absPath: how a base that no longer exists (deleted, or moved away) is
// found by the path it had.
func (s *Store) BasesRecordedAt(absPath string) ([]*Base, error) {
	absPath = filepath.Clean(absPath)
	root := filepath.Join(s.dir, "bases")
	if err := checkDir(root); err != nil {
		return nil, stateErr("state directory", root, err)
	}
	if err := s.migrateLegacy(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list bases in %s: %w", root, err)
	}
	var out []*Base
	for _, e := range entries {
		if !e.IsDir() || !isKey(e.Name()) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if err := checkDir(dir); err != nil {
			return nil, stateErr("base state directory", dir, err)
		}
		rec, err := readRecord(filepath.Join(dir, "base.json"))
		if err != nil {
			return nil, err
		}
		if rec.Path == absPath {
			out = append(out, &Base{path: absPath, dir: dir, dev: rec.Device, ino: rec.Inode})
		}
	}
	return out, nil
}

// isKey reports whether name can be a base's state directory: 32 hex
// digits (BaseKey, or legacyKey of an earlier version).
func isKey(name string) bool {
	if len(name) != 32 {
		return false
	}
	for _, c := range name {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// migrateLegacy moves, once per Store, the state directories earlier
// versions named by the base's path (legacyKey) to the name of the
// directory's identity that their base.json records, so that an apply
// they mark in flight is found by every path to the base. A directory an
// older airlock process holds locked right now is left for a later run
// (checkLegacy refuses its base meanwhile), as is one whose base.json
// cannot be read (its path still finds it: checkLegacy).
func (s *Store) migrateLegacy() error {
	s.migrate.Do(func() {
		root := filepath.Join(s.dir, "bases")
		entries, err := os.ReadDir(root)
		if err != nil {
			s.migrateErr = fmt.Errorf("list bases in %s: %w", root, err)
			return
		}
		for _, e := range entries {
			name := e.Name()
			dir := filepath.Join(root, name)
			if !e.IsDir() || !isKey(name) || checkDir(dir) != nil {
				continue
			}
			rec, err := readRecord(filepath.Join(dir, "base.json"))
			if err != nil || rec.Path == "" || name != legacyKey(rec.Path) || name == BaseKey(rec.Device, rec.Inode) {
				continue
			}
			s.migrateErr = errors.Join(s.migrateErr, moveLegacy(root, dir, filepath.Join(root, BaseKey(rec.Device, rec.Inode))))
		}
	})
	return s.migrateErr
}

func moveLegacy(root, dir, dst string) error {
	unlock, err := tryLockFile(filepath.Join(dir, "lock"))
	if errors.Is(err, ErrLocked) {
		return nil
	}
	if err != nil {
		return stateErr("base state directory", dir, err)
	}
	defer unlock()
	if _, err := os.Lstat(dst); err == nil {
		return nil // both exist: checkLegacy decides
	}
	if err := os.Rename(dir, dst); err != nil {
		return fmt.Errorf("move base state %s (named by its path, as earlier versions did) to %s: %w", dir, dst, err)
	}
	return safefs.SyncDir(root)
}

// checkLegacy refuses a base for which a state directory named by its path
// (an earlier version's) is still there and marks an apply in flight: that
// marker must not be missed. It is there when an older airlock process
// held its lock, when its base.json could not be read, or when the base's
// identity already has a state directory.
func (s *Store) checkLegacy(b *Base) error {
	dir := filepath.Join(s.dir, "bases", legacyKey(b.path))
	if dir == b.dir {
		return nil
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	old := &Base{path: b.path, dir: dir}
	id, ok, err := old.Inflight()
	if err != nil || !ok {
		return err
	}
	return fmt.Errorf("%s, the state an earlier airlock version kept for base %s, marks an apply of transaction %s in flight, and could not be moved to %s, where this version keeps it (an older airlock process holds its lock, its base.json cannot be read, or that directory exists already): stop older airlock processes and run this command again; if it persists, recover with the airlock version that made the commit", dir, b.path, id, b.dir)
}

// PoolDirs lists the pools of recycled staged trees (Base.PoolDir) that
// exist, each with the base path its base.json records.
func (s *Store) PoolDirs() (map[string]string, error) {
	dirs, err := s.baseDirs()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, dir := range dirs {
		pool := filepath.Join(dir, "pool")
		if checkDir(pool) != nil {
			continue
		}
		rec, _ := readRecord(filepath.Join(dir, "base.json"))
		out[pool] = rec.Path
	}
	return out, nil
}

// baseDirs lists the directories under bases/ that are named as a base's
// state directory is; none when there is no bases/ yet.
func (s *Store) baseDirs() ([]string, error) {
	root := filepath.Join(s.dir, "bases")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list bases in %s: %w", root, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && isKey(e.Name()) {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out, nil
}
