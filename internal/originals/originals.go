// Package originals keeps the content that airlock's own commits replace or
// delete in a base, addressed by digest and indexed by the stat facts the
// file had when it was replaced.
//
// A transaction opened before such a commit recorded those same stat facts
// in its manifest, so when it later commits a change to the same path the
// store hands it the common ancestor for a three-way merge. The same
// content is what `undo` restores. Entries are added only after their
// bytes are fsync'd; the index is append-only. Every new name (an object,
// the index, the store's directories) is made durable by an fsync of its
// directory before Add returns, so a commit that reports success after
// keeping its originals keeps them through a power cut.
package originals

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/airlockdev/airlock/internal/filecopy"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// Record is one replaced file: its path, its stat facts when it was
// replaced, and the digest of its bytes.
type Record struct {
	Entry manifest.Entry `json:"entry"`
	TxID  string         `json:"tx"`
	Time  time.Time      `json:"time"`
	// Kind is "" for an original a commit replaced, KindCheckpoint for
	// content a transaction's checkpoint recorded from its staged
	// workspace: the same objects, deduplicated, but never an ancestor
	// (Lookup skips it) and kept only while that transaction is open;
	// KindAtOpen for a base file's bytes at open that a checkpoint kept.
	Kind string `json:"kind,omitempty"`
}

// KindCheckpoint marks a record whose bytes a checkpoint of transaction
// TxID recorded; its Entry's stat facts are those of the staged file.
const KindCheckpoint = "checkpoint"

// KindAtOpen marks a record of a base file's bytes as a transaction
// opened with them, kept by a checkpoint of TxID that recorded the path
// changed while the base file's stat facts still proved them. Like an
// original, its Entry's stat facts are the base file's, and Lookup finds
// it: the bytes a path held with exactly those facts.
const KindAtOpen = "at_open"

// Store is a base's store of originals.
type Store struct {
	dir string

	mu     sync.Mutex
	loaded bool
	byPath map[string][]Record

	objectsSynced sync.Once
	objectsErr    error
}

func (s *Store) syncObjectsOnce() error {
	s.objectsSynced.Do(func() { s.objectsErr = safefs.SyncDir(filepath.Join(s.dir, "objects")) })
	return s.objectsErr
}

const indexFile = "index.jsonl"

// Open opens the store in dir, which is created by the first write (Add,
// Prune): a reader (a merge looking for an ancestor, undo, a check made
// inside `airlock run`, where the state root is read-only) finds a store
// that was never written empty, and creates nothing. The store is airlock
// state: its directories must be the user's own and not writable by others
// (state.CheckDir), and every file in it is opened with state.OpenFile, so
// a symlink, FIFO or device planted there is refused, naming it, never
// followed or waited on.
func Open(dir string) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "objects")} {
		if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err := state.CheckDir(d); err != nil {
			return nil, err
		}
	}
	return &Store{dir: dir}, nil
}

// ensure makes the store's directories before its first write, durably,
// and checks them as Open does.
func (s *Store) ensure() error {
	if err := mkdirDurable(filepath.Join(s.dir, "objects")); err != nil {
		return fmt.Errorf("originals store %s: %w", s.dir, err)
	}
	for _, d := range []string{s.dir, filepath.Join(s.dir, "objects")} {
		if err := state.CheckDir(d); err != nil {
			return err
		}
	}
	return nil
}

// mkdirDurable creates p and its missing parents (0700) and fsyncs the
// parent of each directory it creates: a new directory's name lives in its
// parent, and a power cut could otherwise lose the whole store, objects
// and index alike, after a commit that relied on it reported success.
func mkdirDurable(p string) error {
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s is not a directory", p)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	parent := filepath.Dir(p)
	if parent != p {
		if err := mkdirDurable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return safefs.SyncDir(parent)
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// ObjectPath is where the bytes with digest d are kept.
func (s *Store) ObjectPath(d string) string {
	return filepath.Join(s.dir, "objects", strings.TrimPrefix(d, manifest.DigestPrefix))
}

// Has reports whether the bytes with digest d are kept.
func (s *Store) Has(d string) bool {
	if !validDigest(d) {
		return false
	}
	_, err := os.Lstat(s.ObjectPath(d))
	return err == nil
}

// Open opens the kept bytes with digest d.
func (s *Store) Open(d string) (*os.File, error) {
	if !validDigest(d) {
		return nil, fmt.Errorf("originals: malformed digest %q", d)
	}
	p := s.ObjectPath(d)
	// Kept bytes are what undo writes into the base: an object swapped for
	// a symlink or a FIFO is refused, never followed or blocked on.
	return state.OpenFile(p, os.O_RDONLY, 0)
}

// BadObjectError says a stored object's bytes are not the ones its name
// (their digest) says: something other than airlock wrote it.
type BadObjectError struct {
	Path   string // the object's file
	Digest string // the digest its name says
	Got    string // the digest of the bytes it holds
}

func (e *BadObjectError) Error() string {
	return fmt.Sprintf("the content store's object %s does not hold the bytes its name says (%s): they hash to %s; a process other than airlock wrote it", e.Path, e.Digest, e.Got)
}

// Verify reads the object of d whole and proves its bytes are d's: an
// existing name (Has) proves nothing about what a same-user process left
// under it. A wrong object is a *BadObjectError.
func (s *Store) Verify(d string) error {
	f, err := s.Open(d)
	if err != nil {
		return err
	}
	defer f.Close()
	got, err := manifest.HashReader(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", s.ObjectPath(d), err)
	}
	if got != d {
		return &BadObjectError{Path: s.ObjectPath(d), Digest: d, Got: got}
	}
	return nil
}

// Add keeps the file at src (whose bytes have digest e.Digest) as the
// original of e.Path. src is moved into the store when it is on the same
// file system, else copied; either way it is gone from src afterwards.
func (s *Store) Add(txID string, e manifest.Entry, src string) error {
	return s.AddKind("", txID, e, src)
}

// AddKind is Add for a record of the given kind (KindCheckpoint).
func (s *Store) AddKind(kind, txID string, e manifest.Entry, src string) error {
	return s.AddAll(kind, txID, []manifest.Entry{e}, []string{src})
}

// AddAll is AddKind for many files at once (es[i]'s bytes at srcs[i]):
// each object is made durable as Add makes it, and the index gets their
// records in one append and one fsync.
func (s *Store) AddAll(kind, txID string, es []manifest.Entry, srcs []string) error {
	for _, e := range es {
		if !validDigest(e.Digest) {
			return fmt.Errorf("originals: %s has no digest", e.Path)
		}
	}
	if err := s.ensure(); err != nil {
		return err
	}
	now := time.Now().UTC()
	recs := make([]Record, len(es))
	moved := false
	for i, e := range es {
		m, err := s.put(e, srcs[i])
		if err != nil {
			return err
		}
		moved = moved || m
		recs[i] = Record{Entry: e, TxID: txID, Time: now, Kind: kind}
	}
	// The new objects' names, durable before the index names them: one
	// fsync of their directory for them all.
	if moved {
		if err := safefs.SyncDir(filepath.Join(s.dir, "objects")); err != nil {
			return err
		}
	}
	return s.appendIndex(recs...)
}

// put moves (or copies) the file src, whose bytes are durable, into the
// store as the object of e.Digest, unless the store holds those bytes
// already, and says whether it did: the caller fsyncs the objects'
// directory then. src is gone afterwards.
func (s *Store) put(e manifest.Entry, src string) (moved bool, err error) {
	dst := s.ObjectPath(e.Digest)
	_, err = os.Lstat(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, moveIn(src, dst)
	case err == nil:
		// An object already there is kept only once its bytes are proved
		// to be its name's: one a same-user process overwrote is replaced
		// by src, whose bytes the caller proved, rather than named again
		// as if it held them.
		var bad *BadObjectError
		if verr := s.Verify(e.Digest); errors.As(verr, &bad) {
			return true, moveIn(src, dst)
		} else if verr != nil {
			return false, fmt.Errorf("originals: %w", verr)
		}
		// The object may have been renamed in by a process killed before
		// its directory fsync: once per store, make what is there durable
		// before the index names it again.
		if err := s.syncObjectsOnce(); err != nil {
			return false, err
		}
	default:
		return false, fmt.Errorf("originals: %w", err)
	}
	os.Remove(src)
	return false, nil
}

// moveIn makes src the object dst: renamed where both lie on one file
// system, else copied and src removed. src is gone afterwards either way.
func moveIn(src, dst string) error {
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	if err := copyFile(src, dst); err != nil {
		return err
	}
	os.Remove(src)
	return nil
}

func (s *Store) appendIndex(rs ...Record) error {
	var b []byte
	for _, r := range rs {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b = append(append(b, line...), '\n')
	}
	f, created, err := openIndex(filepath.Join(s.dir, indexFile))
	if err != nil {
		return fmt.Errorf("originals index: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("originals index: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("originals index: %w", err)
	}
	// A new index's name is in the store's directory, not in the file.
	if created {
		if err := safefs.SyncDir(s.dir); err != nil {
			return err
		}
	}
	s.mu.Lock()
	if s.loaded {
		for _, r := range rs {
			s.byPath[r.Entry.Path] = append(s.byPath[r.Entry.Path], r)
		}
	}
	s.mu.Unlock()
	return nil
}

// openIndex opens the index for appending and says whether it created it:
// only a creation changes the store's directory and needs its fsync.
func openIndex(path string) (f *os.File, created bool, err error) {
	for {
		f, err = state.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, false, err
		}
		f, err = state.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, err == nil, err
		}
	}
}

// Lookup finds the digest of the bytes a path held when it had exactly the
// stat facts of e (as a transaction's manifest recorded them at open).
func (s *Store) Lookup(e manifest.Entry) (string, bool) {
	if err := s.load(); err != nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.byPath[e.Path]
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == KindCheckpoint {
			continue
		}
		r := recs[i].Entry
		if manifest.SameStat(r, e) && s.Has(r.Digest) {
			return r.Digest, true
		}
	}
	return "", false
}

// Records lists every record, oldest first.
func (s *Store) Records() ([]Record, error) {
	f, err := state.OpenFile(filepath.Join(s.dir, indexFile), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			// A torn last line from a crash is not an original.
			continue
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

func (s *Store) load() error {
	s.mu.Lock()
	loaded := s.loaded
	s.mu.Unlock()
	if loaded {
		return nil
	}
	recs, err := s.Records()
	if err != nil {
		return err
	}
	byPath := map[string][]Record{}
	for _, r := range recs {
		byPath[r.Entry.Path] = append(byPath[r.Entry.Path], r)
	}
	s.mu.Lock()
	s.byPath, s.loaded = byPath, true
	s.mu.Unlock()
	return nil
}

// Prune keeps only the records for which keep returns true and removes the
// objects no kept record names. It returns the bytes freed.
func (s *Store) Prune(keep func(Record) bool) (int64, error) {
	if err := s.ensure(); err != nil {
		return 0, err
	}
	recs, err := s.Records()
	if err != nil {
		return 0, err
	}
	var kept []Record
	used := map[string]bool{}
	for _, r := range recs {
		if keep(r) {
			kept = append(kept, r)
			used[strings.TrimPrefix(r.Entry.Digest, manifest.DigestPrefix)] = true
		}
	}
	var b []byte
	for _, r := range kept {
		line, err := json.Marshal(r)
		if err != nil {
			return 0, err
		}
		b = append(append(b, line...), '\n')
	}
	if err := safefs.WriteFile(filepath.Join(s.dir, indexFile), b, 0o600); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.loaded = false
	s.mu.Unlock()
	objs := filepath.Join(s.dir, "objects")
	ents, err := os.ReadDir(objs)
	if err != nil {
		return 0, err
	}
	var freed int64
	for _, e := range ents {
		if used[e.Name()] {
			continue
		}
		if fi, err := e.Info(); err == nil {
			freed += fi.Size()
		}
		if err := os.Remove(filepath.Join(objs, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return freed, err
		}
	}
	return freed, nil
}

func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, manifest.DigestPrefix)
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// copyFile publishes a durable copy of src at dst, holes kept.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := safefs.CreateTemp(filepath.Dir(dst), ".in-*")
	if err != nil {
		return err
	}
	defer tmp.Cleanup()
	if _, err := filecopy.Copy(context.Background(), tmp.File, in, filecopy.Options{}); err != nil {
		return err
	}
	return tmp.Rename(dst)
}

// Unused is what Prune with the same keep would free, in bytes, without
// removing anything: for gc --dry-run.
func (s *Store) Unused(keep func(Record) bool) (int64, error) {
	recs, err := s.Records()
	if err != nil {
		return 0, err
	}
	used := map[string]bool{}
	for _, r := range recs {
		if keep(r) {
			used[strings.TrimPrefix(r.Entry.Digest, manifest.DigestPrefix)] = true
		}
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, "objects"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range ents {
		if used[e.Name()] {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n, nil
}
