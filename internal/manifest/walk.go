package manifest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// WalkOptions tunes Walk.
type WalkOptions struct {
	// Skip reports whether a path is outside the walk (an exclude selector).
	// A skipped directory's subtree is not visited at all.
	Skip func(rel string, isDir bool) bool
	// Workers bounds the directories read at once; 0 picks a default that
	// keeps a 2-core machine's disk queue busy without thrashing.
	Workers int
}

// Manifest is a measured tree: entries sorted by path, the root excluded.
type Manifest struct {
	Entries []Entry
	index   map[string]int
}

// Lookup finds the entry for a path.
func (m *Manifest) Lookup(path string) (*Entry, bool) {
	if m.index == nil {
		m.index = make(map[string]int, len(m.Entries))
		for i := range m.Entries {
			m.index[m.Entries[i].Path] = i
		}
	}
	i, ok := m.index[path]
	if !ok {
		return nil, false
	}
	return &m.Entries[i], true
}

// Sort orders entries by path bytes, which puts every directory before
// everything beneath it, and drops the lookup index.
func (m *Manifest) Sort() {
	sort.Slice(m.Entries, func(i, j int) bool { return m.Entries[i].Path < m.Entries[j].Path })
	m.index = nil
}

// Walk measures the tree under root in parallel. Symlinks are recorded, never
// followed. An entry that vanishes between being listed and being measured
// fails the walk with an error naming it, because a manifest that silently
// missed a path would later read as a deletion.
func Walk(ctx context.Context, root string, opts WalkOptions) (*Manifest, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = max(8, runtime.GOMAXPROCS(0)*4)
	}
	w := &walker{ctx: ctx, root: root, skip: opts.Skip, sem: make(chan struct{}, workers)}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	defer w.cancel(nil)
	w.wg.Add(1)
	go w.dir("")
	w.wg.Wait()
	if err := context.Cause(w.ctx); err != nil && w.err == nil {
		w.err = err
	}
	if w.err != nil {
		return nil, w.err
	}
	m := &Manifest{Entries: w.entries}
	m.Sort()
	return m, nil
}

type walker struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	root   string
	skip   func(string, bool) bool
	sem    chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	entries []Entry
	err     error
}

func (w *walker) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.cancel(err)
}

// dir reads one directory. It holds a semaphore slot only while reading, and
// hands subdirectories to new goroutines, so no slot is held while waiting
// on another: the walk cannot deadlock however deep the tree is.
func (w *walker) dir(rel string) {
	defer w.wg.Done()
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		return
	}
	entries, subdirs, err := w.read(rel)
	<-w.sem
	if err != nil {
		w.fail(err)
		return
	}
	w.mu.Lock()
	w.entries = append(w.entries, entries...)
	w.mu.Unlock()
	for _, d := range subdirs {
		w.wg.Add(1)
		go w.dir(d)
	}
}

func (w *walker) read(rel string) ([]Entry, []string, error) {
	abs := w.abs(rel)
	f, err := os.Open(abs)
	if err != nil {
		return nil, nil, walkErr(abs, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, nil, walkErr(abs, err)
	}
	var entries []Entry
	var subdirs []string
	for _, name := range names {
		if w.ctx.Err() != nil {
			return nil, nil, nil
		}
		child := name
		if rel != "" {
			child = rel + "/" + name
		}
		e, err := Lstat(w.abs(child))
		if err != nil {
			return nil, nil, walkErr(w.abs(child), err)
		}
		e.Path = child
		if w.skip != nil && w.skip(child, e.Kind == KindDir) {
			continue
		}
		entries = append(entries, e)
		if e.Kind == KindDir {
			subdirs = append(subdirs, child)
		}
	}
	return entries, subdirs, nil
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
