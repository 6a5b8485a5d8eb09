package manifest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLinked means a path Patch measured is a file with another name: a
// write through either name changes both, and the changes that named one
// cannot be trusted to name the other.
var ErrLinked = errors.New("a file with more than one name")

// Patch returns the manifest Walk would give of root now, made from m, a
// walk of root made earlier, and what changed since: paths, each an entry
// to measure again (gone, it leaves the manifest), and trees, each a
// subtree to measure whole. It is exact when every change to root since m
// was measured is named by a path or lies in a tree (internal/watch's
// Changes); a path whose kind became or stopped being a directory counts
// as a tree. opts.Skip applies as in Walk: an entry skipped, or beneath a
// skipped directory, is left out.
//
// Each path is measured beneath root one component at a time, never
// following a symlink, so a directory swapped for a link makes the paths
// beneath it absent rather than measured elsewhere. A measured file with
// more than one name fails Patch with ErrLinked.
func Patch(ctx context.Context, root string, m *Manifest, paths, trees []string, opts WalkOptions) (*Manifest, error) {
	p := &patcher{root: root, skip: opts.Skip, linked: opts.Linked, dirs: map[string]int{}}
	defer p.close()
	// The directories it steps through are opened O_PATH: a watch of the
	// tree takes a real open of a directory for a possible change (an
	// inode flag set through it makes no event of its own), and this
	// one only stats names in them.
	fd, err := unix.Open(root, pathOnly|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, walkErr(root, &fs.PathError{Op: "open", Path: root, Err: err})
	}
	p.dirs[""] = fd

	// A path whose kind moved to or from a directory is a tree.
	trees = slices.Clone(trees)
	measured := map[string]Entry{}
	for _, rel := range paths {
		if rel == "" {
			continue // the root: no entry of its own
		}
		e, ok, err := p.stat(rel)
		if err != nil {
			return nil, err
		}
		was, had := m.Lookup(rel)
		if (ok && e.Kind == KindDir) != (had && was.Kind == KindDir) {
			trees = append(trees, rel)
			continue
		}
		if ok {
			measured[rel] = e
		}
	}
	trees = outermost(trees)
	inTrees := make(map[string]bool, len(trees))
	for _, t := range trees {
		inTrees[t] = true
	}
	// under asks of rel and each of its ancestors, not of the tree that
	// sorts next to it: "d.old" sorts between "d" and "d/f".
	under := func(rel string) bool {
		return len(inTrees) > 0 && (inTrees[""] || inTrees[rel] || beneath(inTrees, rel))
	}
	changed := map[string]bool{}
	for _, rel := range paths {
		changed[rel] = true
	}
	var fresh []Entry
	for rel, e := range measured {
		if !under(rel) {
			fresh = append(fresh, e)
		}
	}
	for _, t := range trees {
		es, err := p.tree(ctx, t, opts)
		if err != nil {
			return nil, err
		}
		fresh = append(fresh, es...)
	}
	sortEntries(fresh)
	// The kept entries are in order already: merge, not sort, so that a
	// patch of a few paths costs a copy of the manifest, not a sort.
	out := make([]Entry, 0, len(m.Entries)+len(fresh))
	for _, e := range m.Entries {
		if changed[e.Path] || under(e.Path) {
			continue
		}
		for len(fresh) > 0 && fresh[0].Path < e.Path {
			out, fresh = append(out, fresh[0]), fresh[1:]
		}
		e.Digest = ""
		out = append(out, e)
	}
	return &Manifest{Entries: append(out, fresh...)}, nil
}

// Unchanged reports whether each of paths measures beneath root now as m
// holds it: absent from both (or skipped by opts.Skip), or present in both
// with the same stat facts (SameStat). Each path is measured as Patch
// measures it, through directories opened O_PATH; a file with more than
// one name is measured like any other.
func Unchanged(root string, m *Manifest, paths []string, opts WalkOptions) (bool, error) {
	p := &patcher{root: root, skip: opts.Skip, linked: true, dirs: map[string]int{}}
	defer p.close()
	fd, err := unix.Open(root, pathOnly|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, walkErr(root, &fs.PathError{Op: "open", Path: root, Err: err})
	}
	p.dirs[""] = fd
	for _, rel := range paths {
		if rel == "" {
			continue // the root: no entry of its own
		}
		e, ok, err := p.stat(rel)
		if err != nil {
			return false, err
		}
		was, had := m.Lookup(rel)
		if ok != had || (ok && !SameStat(e, *was)) {
			return false, nil
		}
	}
	return true, nil
}

// outermost sorts trees and drops each one beneath another (asking of
// each of its ancestors: "d.old" sorts between "d" and "d/x").
func outermost(trees []string) []string {
	all := make(map[string]bool, len(trees))
	for _, t := range trees {
		all[t] = true
	}
	if all[""] {
		return []string{""}
	}
	var out []string
	for t := range all {
		if !beneath(all, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// beneath reports whether one of rel's proper ancestors (other than the
// root) is in set.
func beneath(set map[string]bool, rel string) bool {
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && set[rel[:i]] {
			return true
		}
	}
	return false
}

type patcher struct {
	root   string
	skip   func(rel string, isDir bool) bool
	linked bool // WalkOptions.Linked
	// dirs are the directories opened so far, by path ("" the root); -1
	// for one that is not a directory (absent, a symlink, a file).
	dirs map[string]int
}

func (p *patcher) close() {
	for _, fd := range p.dirs {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// dir opens the directory rel beneath the root, one component at a time
// without following symlinks, or returns -1 when it is none.
func (p *patcher) dir(rel string) (int, error) {
	if fd, ok := p.dirs[rel]; ok {
		return fd, nil
	}
	parent, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parent, name = rel[:i], rel[i+1:]
	}
	pfd, err := p.dir(parent)
	if err != nil || pfd < 0 {
		p.dirs[rel] = -1
		return -1, err
	}
	if p.skip != nil && p.skip(rel, true) {
		p.dirs[rel] = -1 // skipped: nothing beneath it is measured
		return -1, nil
	}
	fd, err := pathDirAt(pfd, name)
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR:
		fd = -1
	case err != nil:
		return -1, walkErr(filepath.Join(p.root, rel), &fs.PathError{Op: "open", Path: filepath.Join(p.root, rel), Err: err})
	}
	p.dirs[rel] = fd
	return fd, nil
}

// stat measures rel: ok is false when it is absent (or beneath something
// that is no directory, or skipped).
func (p *patcher) stat(rel string) (Entry, bool, error) {
	parent, name := "", rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		parent, name = rel[:i], rel[i+1:]
	}
	pfd, err := p.dir(parent)
	if err != nil || pfd < 0 {
		return Entry{}, false, err
	}
	var st unix.Stat_t
	e, err := statAt(pfd, name, &st)
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR:
		return Entry{}, false, nil
	case err != nil:
		return Entry{}, false, walkErr(filepath.Join(p.root, rel), &fs.PathError{Op: "lstat", Path: filepath.Join(p.root, rel), Err: err})
	}
	e.Path = rel
	if p.skip != nil && p.skip(rel, e.Kind == KindDir) {
		return Entry{}, false, nil
	}
	if e.Kind == KindFile && st.Nlink > 1 && !p.linked {
		return Entry{}, false, fmt.Errorf("%s: %w", filepath.Join(p.root, rel), ErrLinked)
	}
	return e, true, nil
}

// tree measures the subtree t: its own entry and, for a directory,
// everything beneath it.
func (p *patcher) tree(ctx context.Context, t string, opts WalkOptions) ([]Entry, error) {
	if t == "" {
		m, err := Walk(ctx, p.root, opts)
		if err != nil {
			return nil, err
		}
		return m.Entries, nil
	}
	e, ok, err := p.stat(t)
	if err != nil || !ok {
		return nil, err
	}
	if e.Kind != KindDir {
		return []Entry{e}, nil
	}
	sub := opts
	if opts.Skip != nil {
		sub.Skip = func(rel string, isDir bool) bool { return opts.Skip(t+"/"+rel, isDir) }
	}
	m, err := Walk(ctx, filepath.Join(p.root, filepath.FromSlash(t)), sub)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(m.Entries)+1)
	out = append(out, e)
	for _, c := range m.Entries {
		c.Path = t + "/" + c.Path
		out = append(out, c)
	}
	return out, nil
}

// pathDirAt opens the directory name in dirfd, without following a
// symlink, for stepping through and stating names only (pathOnly).
func pathDirAt(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, pathOnly|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.ELOOP {
			err = unix.ENOTDIR
		}
		return fd, err
	}
}
