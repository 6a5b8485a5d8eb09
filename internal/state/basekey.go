package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/safefs"
)

// retiredDir, under bases/, keeps the state of bases that are gone (their
// receipt chain, their originals, the journal of an apply that could not
// be recovered), moved there rather than deleted or inherited.
const retiredDir = "retired"

// StaleBaseError says that the state found under a directory's identity
// was written for another directory: one that has been deleted, and whose
// inode the file system gave to this one (their birth times differ).
// That state marks an apply in flight, which must not be inherited by the
// new directory nor silently dropped.
type StaleBaseError struct {
	Base *Base // the stale state, as it was written (Path is the old base)
	Old  baseRecord
	New  baseRecord
	TxID string // the apply in flight
}

func (e *StaleBaseError) Error() string {
	return fmt.Sprintf("the base state %s was written for the directory %s (created %s), which no longer exists: %s (created %s) is another directory that the file system gave its inode; an apply of transaction %s over %s was interrupted and never recovered, and it cannot be recovered into another directory: run `airlock recover --workdir %s` to clear it (the journal's backups, the only copy of what %s held, are kept)",
		e.Base.dir, e.Old.Path, bornString(e.Old.Born), e.New.Path, bornString(e.New.Born), e.TxID, e.Old.Path, e.New.Path, e.Old.Path)
}

// SharedIdentityError says that two directories mounted right now have
// one identity: their file systems are copies of one another (a cloned
// image, an LVM snapshot) with the same UUID. Their bases cannot be told
// apart, and sharing one state (lock, marker, receipt chain) would mix
// them up.
type SharedIdentityError struct {
	Path, Other string
	Identity    Identity
}

func (e *SharedIdentityError) Error() string {
	return fmt.Sprintf("%s and %s are two directories with one identity (%s): their file systems are copies of one another (a cloned disk image, an LVM snapshot) with the same UUID, so airlock cannot tell their bases apart; give one of them a new UUID (tune2fs -U random, xfs_admin -U generate, btrfstune -u) or unmount it, then run this command again", e.Path, e.Other, e.Identity)
}

func bornString(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000000000 UTC")
}

// baseFor finds (creating if needed) the state directory of the base want
// names, by its identity (or, with key, under that name: an earlier
// version's), and squares it with base.json. live says want was just
// measured at want.Path (Base); otherwise it comes from a transaction's
// record (BaseOf) and only the key is trusted.
//
// When base.json names another device number, the file system is the same
// one mounted again (a reboot, the disk plugged in again), or a copy of it
// mounted beside it: then the recorded path still leads to a directory of
// that identity under the recorded device, and the two cannot be told
// apart (*SharedIdentityError). When base.json names another path, the
// directory is the same one reached another way (an alias: the recorded
// path still leads to it) or the same one moved (the recorded path is
// gone, or names another directory; its birth time, where the file system
// keeps one, agrees). A moved base's record follows it, unless an apply
// is in flight: then the record keeps the path the apply was made over,
// for the messages that name it. When the birth times differ, the state
// belongs to a deleted directory whose inode was reused: it is retired
// (moved aside, not inherited), or, when it marks an apply in flight,
// reported as a *StaleBaseError.
func (s *Store) baseFor(want baseRecord, key string, live bool) (*Base, error) {
	root := filepath.Join(s.dir, "bases")
	if err := checkDir(root); err != nil {
		return nil, stateErr("state directory", root, err)
	}
	if err := s.migrateLegacy(); err != nil {
		return nil, err
	}
	if key == "" {
		key = want.identity().Key()
	}
	b := &Base{path: want.Path, dir: filepath.Join(root, key), id: want.identity()}
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
	if have.Path == "" {
		// Missing or damaged: base.json only informs humans and gc, so it
		// is simply (re)written.
		return b, writeRecord(recPath, want)
	}
	if !live {
		// A transaction's record may be older than base.json: only the
		// path is told apart.
		if have.Path != want.Path {
			b.recorded = have.Path
		}
		return b, nil
	}
	if have.identity().Match(want.identity()) != Same {
		return b, writeRecord(recPath, want) // not this directory's: damaged
	}
	// Before the birth times: a copy's directory may have been made at
	// another time, and is not a deleted directory's inode reused.
	if have.Device != want.Device {
		if other, ok := sharedIdentity(have, want); ok {
			return nil, &SharedIdentityError{Path: want.Path, Other: other, Identity: want.identity()}
		}
	}
	if have.Born != 0 && want.Born != 0 && have.Born != want.Born {
		return s.reused(b, have, want)
	}
	rewrite := have.Device != want.Device || have.FS != want.FS || (have.Born == 0 && want.Born != 0)
	if have.Path == want.Path {
		if rewrite {
			return b, writeRecord(recPath, want)
		}
		return b, nil
	}
	b.recorded = have.Path
	if sameDir(have.Path, want) {
		// An alias: the record keeps the first path.
		if rewrite {
			want.Path = have.Path
			return b, writeRecord(recPath, want)
		}
		return b, nil
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

// sharedIdentity reports whether the path have records is, right now,
// another directory with want's identity under the device number have
// records: a second file system with the same identity is mounted.
func sharedIdentity(have, want baseRecord) (string, bool) {
	if have.Path == want.Path || !want.identity().Stable() {
		return "", false
	}
	now, err := Identify(have.Path)
	if err != nil || now.Dev != have.Device || now.Dev == want.Device {
		return "", false
	}
	return have.Path, now.Match(want.identity()) == Same
}

// reused handles state whose directory was deleted and whose inode now
// names the directory want: without an apply in flight the old state is
// retired and the new directory starts afresh.
func (s *Store) reused(b *Base, have, want baseRecord) (*Base, error) {
	old := &Base{path: have.Path, dir: b.dir, id: have.identity()}
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

// sameDir reports whether path is, now, the directory want was measured
// as (its device too: an alias is a path to it within this boot).
func sameDir(path string, want baseRecord) bool {
	now, err := Identify(path)
	return err == nil && now.Dev == want.Device && now.Match(want.identity()) == Same
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

// Identity is the identity of the directory this state belongs to, as it
// was found by (measured, or recorded by a transaction).
func (b *Base) Identity() Identity { return b.id }

// Retire moves the base's whole state directory (lock, markers, receipt
// chain, originals) to bases/retired/<key>-<ns> and returns where. For a
// base that is gone: its state is kept for the user, never inherited by a
// directory that later gets its identity.
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
	if root := filepath.Join(s.dir, "bases"); checkDir(root) != nil {
		return nil, stateErr("state directory", root, checkDir(root))
	}
	all, err := s.Bases()
	if err != nil {
		return nil, err
	}
	var out []*Base
	for _, b := range all {
		if b.path == absPath {
			out = append(out, b)
		}
	}
	return out, nil
}

// Bases lists every base's state directory, each at the path its
// base.json records (which need not exist any more): how something kept
// for every base, such as the receipt chains, is found without a path.
func (s *Store) Bases() ([]*Base, error) {
	root := filepath.Join(s.dir, "bases")
	if err := checkDir(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
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
		out = append(out, &Base{path: rec.Path, dir: dir, id: rec.identity()})
	}
	return out, nil
}

// isKey reports whether name can be a base's state directory: an
// Identity's Key, or 32 hex digits (BaseKey or legacyKey, of earlier
// versions).
func isKey(name string) bool {
	if isLegacyName(name) {
		return true
	}
	rest, ok := "", false
	for _, p := range []string{"fsid-", "uuid-", "dev-"} {
		if r, found := strings.CutPrefix(name, p); found {
			rest, ok = r, true
		}
	}
	if !ok || len(name) > 100 || rest == "" {
		return false
	}
	for _, c := range rest {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

// isLegacyName reports whether name is 32 hex digits: a state directory
// named by an earlier version (BaseKey or legacyKey).
func isLegacyName(name string) bool {
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
// versions named by the base's path (legacyKey) or by its device and inode
// (BaseKey) to their identity's key, so that the base finds them whatever
// device number its disk gets later. Only a directory whose base is still
// there, with the device and inode its base.json records, can be
// measured: the others stay (their disk not mounted, or back under
// another device number; their base deleted), and an apply one marks in
// flight is indexed (indexDir), so that the base's path still finds it.
// A directory an older airlock process holds locked right now is left for
// a later run, as is one whose base.json cannot be read: checkLegacy
// refuses their base meanwhile while they mark an apply in flight.
//
// Finding them costs a listing of bases/ per process, names only: the
// directories already under an identity's key are not read.
func (s *Store) migrateLegacy() error {
	s.migrate.Do(func() {
		root := filepath.Join(s.dir, "bases")
		entries, err := os.ReadDir(root)
		if err != nil {
			s.migrateErr = fmt.Errorf("list bases in %s: %w", root, err)
			return
		}
		for _, e := range entries {
			if e.IsDir() && isLegacyName(e.Name()) {
				s.migrateErr = errors.Join(s.migrateErr, s.migrateOne(e.Name()))
			}
		}
	})
	return s.migrateErr
}

// migrateOne moves the earlier version's state directory bases/<name> to
// its base's identity's key where it can, and otherwise indexes the apply
// it marks in flight.
func (s *Store) migrateOne(name string) error {
	root := filepath.Join(s.dir, "bases")
	dir := filepath.Join(root, name)
	if checkDir(dir) != nil {
		return nil
	}
	rec, err := readRecord(filepath.Join(dir, "base.json"))
	if err != nil || rec.Path == "" || (name != legacyKey(rec.Path) && name != BaseKey(rec.Device, rec.Inode)) {
		return nil
	}
	if now, err := Identify(rec.Path); err == nil && now.Dev == rec.Device && now.Ino == rec.Inode {
		rec.FS = now.FS
		if moved, err := s.moveLegacy(dir, now.Key(), rec); moved || err != nil {
			return err
		}
	}
	old := &Base{path: rec.Path, dir: dir, id: rec.identity()}
	txID, ok, err := old.Inflight()
	if err != nil || !ok {
		return nil // an unreadable marker: checkLegacy refuses its base
	}
	if _, err := os.Lstat(indexPath(s.dir, name)); err == nil {
		return nil
	}
	return old.indexInflight(txID)
}

// moveLegacy renames an earlier version's state directory dir to key,
// under its lock, with rec (which now has the file system's identity) as
// its base.json. An apply it marks in flight is indexed under the new
// name before the rename and unindexed under the old one after it, so
// the index names it throughout. It moves nothing when an older airlock
// process holds the lock or key exists already.
func (s *Store) moveLegacy(dir, key string, rec baseRecord) (bool, error) {
	unlock, err := tryLockFile(filepath.Join(dir, "lock"))
	if errors.Is(err, ErrLocked) {
		return false, nil
	}
	if err != nil {
		return false, stateErr("base state directory", dir, err)
	}
	defer unlock()
	root := filepath.Dir(dir)
	dst := filepath.Join(root, key)
	if _, err := os.Lstat(dst); err == nil {
		return false, nil // both exist: checkLegacy decides
	}
	old := &Base{path: rec.Path, dir: dir, id: rec.identity()}
	txID, inflight, err := old.Inflight()
	if err != nil {
		return false, nil // checkLegacy refuses its base
	}
	if inflight {
		if err := writeIndex(s.dir, key, indexEntry{TxID: txID, Path: rec.Path, FS: rec.FS, Device: rec.Device, Inode: rec.Inode}); err != nil {
			return false, err
		}
	}
	if err := os.Rename(dir, dst); err != nil {
		return false, fmt.Errorf("move base state %s (named as earlier versions did) to %s: %w", dir, dst, err)
	}
	if err := safefs.SyncDir(root); err != nil {
		return true, err
	}
	if inflight {
		if err := removeIndex(s.dir, filepath.Base(dir)); err != nil {
			return true, err
		}
	}
	return true, writeRecord(filepath.Join(dst, "base.json"), rec)
}

// checkLegacy refuses a base for which a state directory an earlier
// version named (by its path, or by its device and inode) is still there
// and marks an apply in flight: that marker must not be missed. One that
// appeared since migrateLegacy ran (an older airlock process, still
// running) is moved now if it can be. It stays when an older airlock
// process holds its lock, when its base.json or its marker cannot be
// read, or when the base's identity already has a state directory.
func (s *Store) checkLegacy(b *Base) error {
	for _, name := range []string{legacyKey(b.path), BaseKey(b.id.Dev, b.id.Ino)} {
		dir := filepath.Join(s.dir, "bases", name)
		if dir == b.dir {
			continue
		}
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := s.migrateOne(name); err != nil {
			return err
		}
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		old := &Base{path: b.path, dir: dir}
		id, ok, err := old.Inflight()
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		return fmt.Errorf("%s, the state an earlier airlock version kept for base %s, marks an apply of transaction %s in flight, and could not be moved to %s, where this version keeps it (an older airlock process holds its lock, its base.json cannot be read, or that directory exists already): stop older airlock processes and run this command again; if it persists, recover with the airlock version that made the commit", dir, b.path, id, b.dir)
	}
	return nil
}

// legacyKeyOf is where the state of a directory that a transaction of an
// earlier version recorded by device and inode alone is, when its path no
// longer measures so: still under that version's name, or indexed under
// another with an apply in flight; "" when neither (then the device
// number is the only identity left: Identity.Key).
func (s *Store) legacyKeyOf(id Identity) (string, error) {
	name := BaseKey(id.Dev, id.Ino)
	if _, err := os.Lstat(filepath.Join(s.dir, "bases", name)); err == nil {
		return name, nil
	}
	dir := filepath.Join(s.dir, indexDir)
	names, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("list %s: %w", dir, err)
	}
	for _, n := range names {
		key, ok := strings.CutSuffix(n.Name(), ".json")
		if !ok || !isKey(key) {
			continue
		}
		if e, err := s.readIndex(key); err == nil && e.Device == id.Dev && e.Inode == id.Ino {
			return key, nil
		}
	}
	return "", nil
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
