package manifest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/safefs"
)

// WalkOptions tunes Walk.
type WalkOptions struct {
	// Skip reports whether a path is outside the walk (an exclude selector).
	// A skipped directory's subtree is not visited at all.
	Skip func(rel string, isDir bool) bool
	// Workers bounds the directories read at once; 0 picks a default that
	// keeps a 2-core machine's disk queue busy without thrashing.
	Workers int
	// Since, when set, is a previous measurement of the same root: a
	// directory whose stat proves its names unchanged since then is not
	// read, its names are taken from it (see Since). Every entry is
	// measured all the same.
	Since *Since
	// Linked, for Patch, measures a file with more than one name like any
	// other instead of failing with ErrLinked: the caller accounts for
	// writes through the other names itself (internal/watchd names every
	// such file of a base at every refresh).
	Linked bool
}

// Manifest is a measured tree: entries sorted by path, the root excluded.
type Manifest struct {
	Entries []Entry
	next    int // where the last Lookup ended: lookups in path order hit it
	// listed says Entries name every entry of each directory they hold
	// (and of the root) but those of the directories in unlisted, sorted,
	// where the walk's Skip left one out. In memory only: a manifest
	// decoded from a file does not say (see Listed).
	listed   bool
	unlisted []string
	reused   int // directories whose names the walk took from Since
}

// Lookup finds the entry for a path. Entries are sorted, so it searches
// them in place; lookups made in path order (a diff's) cost O(1) each,
// as the search starts where the previous one ended. Not safe for
// concurrent use.
func (m *Manifest) Lookup(path string) (*Entry, bool) {
	es := m.Entries
	for i := m.next; i < len(es) && i <= m.next+1; i++ {
		if es[i].Path == path {
			m.next = i + 1
			return &es[i], true
		}
	}
	i, ok := slices.BinarySearchFunc(es, path, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
	m.next = i
	if !ok {
		return nil, false
	}
	m.next = i + 1
	return &es[i], true
}

// Sort orders entries by path bytes, which puts every directory before
// everything beneath it, which Lookup relies on.
func (m *Manifest) Sort() {
	sortEntries(m.Entries)
	m.next = 0
}

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
}

// Walk measures the tree under root in parallel. Symlinks are recorded, never
// followed. An entry that vanishes between being listed and being measured
// fails the walk with an error naming it, because a manifest that silently
// missed a path would later read as a deletion.
//
// Each directory is opened once, beneath its parent's path without
// following a symlink in its last component, and its entries are measured
// with fstatat on that descriptor: the kernel resolves one name per entry,
// not the whole path.
func Walk(ctx context.Context, root string, opts WalkOptions) (*Manifest, error) {
	workers := opts.Workers
	if workers <= 0 {
		// Stat calls on a warm cache are CPU-bound in the kernel, on a
		// cold one they wait on the disk: more workers than cores serve
		// both.
		workers = max(8, runtime.GOMAXPROCS(0)*4)
	}
	w := &walker{root: root, skip: opts.Skip, sem: make(chan struct{}, workers)}
	if opts.Since != nil {
		w.since = &sinceState{s: opts.Since}
	}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	defer w.cancel(nil)
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, walkErr(root, &fs.PathError{Op: "open", Path: root, Err: err})
	}
	w.rootFd = fd
	defer unix.Close(fd)
	if w.since != nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, walkErr(root, &fs.PathError{Op: "fstat", Path: root, Err: err})
		}
		w.rootDev = uint64(st.Dev)
	}
	w.wg.Add(1)
	top := &node{}
	go w.dir("", top)
	w.wg.Wait()
	if err := context.Cause(w.ctx); err != nil && w.err == nil {
		w.err = err
	}
	if w.err != nil {
		return nil, w.err
	}
	es := make([]Entry, 0, w.count.Load())
	slices.Sort(w.unlisted)
	return &Manifest{Entries: top.emit(es), listed: true, unlisted: w.unlisted, reused: int(w.reused.Load())}, nil
}

// node is one directory's entries, sorted by name the way their paths
// sort: emitting the nodes depth first then yields the whole manifest in
// path order without a global sort, which on a large tree costs a visible
// share of the walk.
type node struct {
	entries []Entry
	kids    []*node // kids[i] is entries[i]'s directory, nil for the rest
	order   []token
}

// token places an entry, or a directory's subtree, in its parent's order.
// An entry sorts by its name; a subtree by its name plus "/", since every
// path beneath it starts so. The two differ when a sibling's name extends
// the directory's with a byte below '/': "a", "a.txt", "a/x".
type token struct {
	i   int32
	sub bool
}

func (n *node) sortKey(t token) (string, bool) { return baseName(n.entries[t.i].Path), t.sub }

func (n *node) emit(out []Entry) []Entry {
	for _, t := range n.order {
		if t.sub {
			if k := n.kids[t.i]; k != nil {
				out = k.emit(out)
			}
			continue
		}
		out = append(out, n.entries[t.i])
	}
	return out
}

// order sorts the node's tokens.
func (n *node) sort() {
	n.order = make([]token, 0, len(n.entries)+8)
	for i := range n.entries {
		n.order = append(n.order, token{i: int32(i)})
		if n.entries[i].Kind == KindDir {
			n.order = append(n.order, token{i: int32(i), sub: true})
		}
	}
	slices.SortFunc(n.order, func(a, b token) int {
		an, as := n.sortKey(a)
		bn, bs := n.sortKey(b)
		return compareKeys(an, as, bn, bs)
	})
}

// compareKeys compares a+"/"[if as] with b+"/"[if bs] without building
// either string.
func compareKeys(a string, as bool, b string, bs bool) int {
	if c := strings.Compare(a, b); c != 0 {
		if as && strings.HasPrefix(b, a) {
			// a/ against a longer b: '/' against b's next byte.
			return cmpByte('/', b[len(a)])
		}
		if bs && strings.HasPrefix(a, b) {
			return cmpByte(a[len(b)], '/')
		}
		return c
	}
	switch {
	case as == bs:
		return 0
	case as:
		return 1
	}
	return -1
}

func cmpByte(a, b byte) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

type walker struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	root   string
	rootFd int
	skip   func(string, bool) bool
	sem    chan struct{}
	wg     sync.WaitGroup
	count  atomic.Int64
	// since and rootDev: the previous measurement whose listings the walk
	// may reuse, and the root's device (only its file system's clock is
	// known).
	since   *sinceState
	rootDev uint64
	reused  atomic.Int64 // directories whose names were not read

	mu       sync.Mutex
	err      error
	unlisted []string // directories where skip left an entry out
}

func (w *walker) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.cancel(err)
}

// dir reads one directory into n. It holds a semaphore slot only while
// reading, and hands subdirectories to new goroutines, so no slot is held
// while waiting on another: the walk cannot deadlock however deep the
// tree is.
func (w *walker) dir(rel string, n *node) {
	defer w.wg.Done()
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		return
	}
	entries, err := w.read(rel)
	<-w.sem
	if err != nil {
		w.fail(err)
		return
	}
	if len(entries) == 0 {
		return
	}
	w.count.Add(int64(len(entries)))
	n.entries = entries
	n.kids = make([]*node, len(entries))
	for i := range entries {
		if entries[i].Kind == KindDir {
			k := &node{}
			n.kids[i] = k
			w.wg.Add(1)
			go w.dir(entries[i].Path, k)
		}
	}
	n.sort()
}

func (w *walker) read(rel string) ([]Entry, error) {
	fd := w.rootFd
	if rel != "" {
		var err error
		fd, err = openDirAt(w.rootFd, filepath.FromSlash(rel))
		if err != nil {
			return nil, walkErr(w.abs(rel), &fs.PathError{Op: "open", Path: w.abs(rel), Err: err})
		}
		defer unix.Close(fd)
	}
	names, ok, err := w.sinceNames(rel, fd)
	if err == nil && !ok {
		names, err = readNames(fd)
	}
	if err != nil {
		return nil, walkErr(w.abs(rel), &fs.PathError{Op: "readdirent", Path: w.abs(rel), Err: err})
	}
	entries := make([]Entry, 0, len(names))
	prefix := ""
	if rel != "" {
		prefix = rel + "/"
	}
	var st unix.Stat_t
	skipped := false
	for _, name := range names {
		if w.ctx.Err() != nil {
			return nil, nil
		}
		child := prefix + name
		e, err := statAt(fd, name, &st)
		if err != nil {
			return nil, walkErr(w.abs(child), &fs.PathError{Op: "lstat", Path: w.abs(child), Err: err})
		}
		e.Path = child
		if w.skip != nil && w.skip(child, e.Kind == KindDir) {
			skipped = true
			continue
		}
		entries = append(entries, e)
	}
	if skipped {
		w.mu.Lock()
		w.unlisted = append(w.unlisted, rel)
		w.mu.Unlock()
	}
	return entries, nil
}

// openDirAt opens the directory rel beneath dirfd without following a
// symlink in its last component: a directory swapped for a link during
// the walk fails it instead of walking elsewhere.
func openDirAt(dirfd int, rel string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.ELOOP {
			err = unix.ENOTDIR
		}
		return fd, err
	}
}

// statAt measures name in dirfd without following it.
func statAt(dirfd int, name string, st *unix.Stat_t) (Entry, error) {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Entry{}, err
		}
		break
	}
	e := FromStat(st)
	if e.Kind == KindSymlink {
		t, err := readlinkAt(dirfd, name, int(st.Size))
		if err != nil {
			return Entry{}, err
		}
		e.Target = t
	}
	return e, nil
}

// readlinkAt reads a symlink's target; size is the length lstat gave,
// which a link changed meanwhile may have outgrown.
func readlinkAt(dirfd int, name string, size int) (string, error) {
	n := max(size+1, 128)
	for {
		buf := make([]byte, n)
		k, err := unix.Readlinkat(dirfd, name, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if k < n {
			return string(buf[:k]), nil
		}
		n *= 2
	}
}

// FromStat converts an lstat result into an entry (no path, no target).
func FromStat(st *unix.Stat_t) Entry {
	m := safefs.FileMode(uint32(st.Mode))
	e := Entry{Kind: KindOf(m), Mode: m & ModeMask, Size: st.Size, Ino: uint64(st.Ino), Dev: uint64(st.Dev)}
	if e.Kind != KindFile {
		e.Size = 0
	}
	e.MtimeNs, e.CtimeNs = statTimes(st)
	return e
}

func (w *walker) abs(rel string) string {
	if rel == "" {
		return w.root
	}
	return w.root + string(filepath.Separator) + filepath.FromSlash(rel)
}

func walkErr(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: vanished while airlock was measuring the tree; retry when nothing is deleting files there", path)
	}
	if errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%s: changed type while airlock was measuring the tree; retry when it is quiet", path)
	}
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%s: cannot be read (%w); fix its permissions or --exclude it", path, unwrapPath(err))
	}
	return fmt.Errorf("measure %s: %w", path, unwrapPath(err))
}

// unwrapPath drops the *PathError wrapper whose path the message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Lstat measures one path without following a final symlink. The returned
// entry's Path is empty; Digest is left for Hash.
func Lstat(path string) (Entry, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Entry{}, err
	}
	e := FromFileInfo(fi)
	if e.Kind == KindSymlink {
		t, err := os.Readlink(path)
		if err != nil {
			return Entry{}, err
		}
		e.Target = t
	}
	return e, nil
}

// FromFileInfo converts an lstat result into an entry (no path, no target).
func FromFileInfo(fi fs.FileInfo) Entry {
	m := fi.Mode()
	e := Entry{Kind: KindOf(m), Mode: m & ModeMask, Size: fi.Size()}
	if e.Kind != KindFile {
		e.Size = 0
	}
	fillSys(&e, fi)
	return e
}

// IsGitMeta reports whether a path is a .git directory or file (at any
// depth) or lies beneath one. Such paths are copied into a staged tree so
// that git works there, but never belong to a change set.
func IsGitMeta(rel string) bool {
	for {
		i := strings.IndexByte(rel, '/')
		if i < 0 {
			return rel == ".git"
		}
		if rel[:i] == ".git" {
			return true
		}
		rel = rel[i+1:]
	}
}
