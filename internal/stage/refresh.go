package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
)

// Existing is a tree already at Request.Dir, a former staged workspace,
// with what the caller proves about it: Refresh keeps of it only what that
// proof covers and the base still matches.
type Existing struct {
	// Measure walks the tree at Request.Dir as it stands now and says
	// which of its entries are exactly as they were when its transaction
	// settled (untouched[j] for tree entry j: the caller compared it with
	// the settling walk); an entry not proved so is never kept. Refresh
	// runs it beside the base's walk, with a context that ends when that
	// walk fails.
	Measure func(ctx context.Context) (tree *manifest.Manifest, untouched []bool, err error)
	// TreeWalkNs is when the settling walk started: an entry whose ctime
	// is not older by the state file system's window (Request.StateClock)
	// could have been written again within the same timestamp step without
	// a trace, and its bytes are compared.
	TreeWalkNs int64
	// Source loads, for each entry that was provably untouched since it
	// was staged, the base's stat facts of the very version its bytes were
	// copied from (see internal/pool's Source); any other entry it holds
	// is a KindNone name and proves nothing. A base file that still shows
	// exactly those facts still holds those bytes (ctime cannot be set by
	// any user call). A loader, called once both walks are done, so that
	// it may be decoded beside them.
	Source func() (*manifest.Manifest, error)
	// SourceWalkNs is when the base was measured for Source: a source
	// entry whose ctime is not older by the base file system's window
	// (Request.BaseClock) proves nothing by stat alone, and its bytes are
	// compared.
	SourceWalkNs int64
	// BaseSince, if set, lets the base's walk take the names of the
	// directories whose stat proves them unchanged from a previous
	// measurement instead of reading them (manifest.Since).
	BaseSince *manifest.Since
	// MeasureBase, if set, measures the base instead of the walk: the
	// manifest a walk with Request.Skip would give now (internal/pool
	// makes it from a watch of the base, falling back to the walk).
	MeasureBase func(ctx context.Context) (*manifest.Manifest, error)

	source *manifest.Manifest // Source, once loaded
}

// Refreshed says what Refresh did to a pooled tree.
type Refreshed struct {
	Kept    int   // entries left as they were
	Copied  int   // files and symlinks (re)made from the base
	Bytes   int64 // bytes of the files copied
	Removed int   // entries removed (a directory counts once)
	// BaseListings and TreeListings are the directories of the base and
	// of the tree whose names the walks took from a previous measurement
	// instead of reading them (Existing.BaseSince, manifest.Since).
	BaseListings, TreeListings int
}

// Refresh makes req.Dir, which holds the tree e describes, exactly what
// staging req.Base afresh would make it: the same paths, types, modes,
// mtimes, sizes, bytes and symlink targets, with no inode shared with the
// base or within the tree. Only what differs is copied; what the base no
// longer has (or req.Skip now leaves out) is removed. The Result is what
// Stage would return. The caller must have proved that no process can
// reach the tree and which of its entries nothing wrote (e.Untouched):
// internal/pool does both. On any error the tree is in an unknown state:
// the caller deletes it.
func Refresh(ctx context.Context, req Request, e Existing) (*Result, *Refreshed, error) {
	if !filepath.IsAbs(req.Base) || !filepath.IsAbs(req.Dir) {
		return nil, nil, fmt.Errorf("refresh %s from %s: both paths must be absolute", quote(req.Dir), quote(req.Base))
	}
	base, dir := filepath.Clean(req.Base), filepath.Clean(req.Dir)
	root, err := os.Stat(base)
	if err != nil {
		return nil, nil, fmt.Errorf("stage %s: %w", quote(base), unwrapPath(err))
	}
	if !root.IsDir() {
		return nil, nil, fmt.Errorf("stage %s: not a directory", quote(base))
	}
	// The two walks are independent, and each alone leaves a core idle
	// part of the time: they run side by side, and nothing in the tree is
	// touched before both are done. WalkNs is taken before either starts:
	// the kept entries of the staged manifest are the tree's walk's.
	walkNs := time.Now().UnixNano()
	m, tree, untouched, err := walkBoth(ctx, base, req, e)
	if err != nil {
		return nil, nil, err
	}
	if e.source, err = e.Source(); err != nil {
		return nil, nil, fmt.Errorf("pooled tree's record: %w", err)
	}
	src, err := openSource(base)
	if err != nil {
		return nil, nil, err
	}
	defer src.close()
	r := &refresher{ctx: ctx, src: src, dir: dir, base: m, tree: tree, covered: untouched, p: e, touched: map[string]bool{},
		stateClock: req.StateClock, baseClock: req.BaseClock}
	r.stats.BaseListings, r.stats.TreeListings = m.Reused(), tree.Reused()
	if err := r.plan(); err != nil {
		return nil, nil, err
	}
	r.p.source, r.covered = nil, nil // the plan has what it needed from them
	if err := r.apply(req.Progress); err != nil {
		return nil, nil, stopped(ctx, base, err)
	}
	staged, err := r.stagedManifest()
	if err != nil {
		return nil, nil, err
	}
	c := &copier{dir: dir, m: m}
	for i := range m.Entries {
		if m.Entries[i].Kind == manifest.KindOther {
			r.warnings = append(r.warnings, fmt.Sprintf("skipped %s %s: FIFOs, sockets and device nodes are not copied", specialKind(src.abs(m.Entries[i].Path)), quote(m.Entries[i].Path)))
		}
	}
	warnings, err := c.check(staged)
	if err != nil {
		return nil, nil, err
	}
	res := &Result{Base: m, Staged: staged, Warnings: append(r.warnings, warnings...), WalkNs: walkNs}
	if err := digestRacy(ctx, res, dir, req); err != nil {
		return nil, nil, stopped(ctx, base, err)
	}
	if req.Progress != nil {
		req.Progress(len(staged.Entries), len(staged.Entries))
	}
	return res, &r.stats, nil
}

// walkBoth measures the base (m) beside the caller's walk of the tree.
// A failure of either stops the other; the tree's is reported first, as
// it says the tree is not to be reused.
func walkBoth(ctx context.Context, base string, req Request, e Existing) (m, tree *manifest.Manifest, untouched []bool, err error) {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var treeErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		tree, untouched, treeErr = e.Measure(wctx)
		if treeErr != nil {
			cancel(treeErr)
		}
	})
	if e.MeasureBase != nil {
		m, err = e.MeasureBase(wctx)
	} else {
		m, err = manifest.Walk(wctx, base, manifest.WalkOptions{Skip: req.Skip, Since: e.BaseSince})
	}
	if err != nil {
		cancel(err)
	}
	wg.Wait()
	switch {
	case treeErr != nil:
		return nil, nil, nil, treeErr
	case err != nil:
		return nil, nil, nil, stopped(ctx, base, err)
	}
	return m, tree, untouched, nil
}

type refresher struct {
	ctx  context.Context
	src  *source
	dir  string
	base *manifest.Manifest // the base now, as staged (updated by copies)
	tree *manifest.Manifest // the pooled tree now
	// covered[j] says tree entry j is as the pooled walk saw it (untouched).
	covered []bool
	p       Existing
	// stateClock and baseClock are Request's: the pooled tree lies on the
	// state's file system, the source versions on the base's.
	stateClock, baseClock fsclock.Clock

	remove []string // tree paths to remove, parents before children, none under another
	create []int    // base entries to make: directories, files, symlinks
	// kept[i] is the index of the tree's entry kept for base entry i, -1
	// where none is; made[i] is the staged entry of one made or measured
	// anew (indices, so that the plan does not copy the tree's manifest).
	kept    []int32
	made    map[int]manifest.Entry
	touched map[string]bool // directories whose mode or times must be set back
	scrub   []string        // kept directories the command touched
	dirs    []int           // base directories to fix, by index

	stats    Refreshed
	warnings []string
}

// plan decides, path by path, what stays and what is made again.
func (r *refresher) plan() error {
	r.kept = make([]int32, len(r.base.Entries))
	for i := range r.kept {
		r.kept[i] = -1
	}
	r.made = map[int]manifest.Entry{}
	shared := sharedInodes(r.tree)
	var removedDir string // the last directory removed: its subtree goes with it
	gone := func(path string) bool {
		return removedDir != "" && strings.HasPrefix(path, removedDir+"/")
	}
	drop := func(t *manifest.Entry) {
		if gone(t.Path) {
			return
		}
		r.remove = append(r.remove, t.Path)
		r.touchParent(t.Path)
		if t.Kind == manifest.KindDir {
			removedDir = t.Path
		}
	}
	i, j := 0, 0
	bs, ts := r.base.Entries, r.tree.Entries
	for i < len(bs) || j < len(ts) {
		switch {
		case j == len(ts) || (i < len(bs) && bs[i].Path < ts[j].Path):
			r.plant(i)
			i++
		case i == len(bs) || ts[j].Path < bs[i].Path:
			drop(&ts[j])
			j++
		default:
			b, t := &bs[i], &ts[j]
			keep, err := r.keep(b, t, r.covered[j], shared)
			if err != nil {
				return err
			}
			if gone(t.Path) {
				keep = false
			} else if !keep {
				drop(t)
			}
			if keep {
				r.kept[i] = int32(j)
				if b.Kind == manifest.KindDir && (t.Mode != b.Mode || t.MtimeNs != b.MtimeNs) {
					r.touched[b.Path] = true
				}
				r.stats.Kept++
			} else {
				r.plant(i)
			}
			i++
			j++
		}
	}
	for i := range bs {
		if bs[i].Kind == manifest.KindDir && r.touched[bs[i].Path] {
			r.dirs = append(r.dirs, i)
		}
	}
	return nil
}

// sharedInodes lists the inodes that more than one file of the tree has.
func sharedInodes(tree *manifest.Manifest) map[uint64]bool {
	inos := make([]uint64, 0, len(tree.Entries))
	for i := range tree.Entries {
		if tree.Entries[i].Kind == manifest.KindFile {
			inos = append(inos, tree.Entries[i].Ino)
		}
	}
	slices.Sort(inos)
	shared := map[uint64]bool{}
	for k := 1; k < len(inos); k++ {
		if inos[k] == inos[k-1] {
			shared[inos[k]] = true
		}
	}
	return shared
}

// plant marks base entry i to be made in the tree.
func (r *refresher) plant(i int) {
	e := &r.base.Entries[i]
	if e.Kind == manifest.KindOther {
		return
	}
	r.create = append(r.create, i)
	r.touchParent(e.Path)
	if e.Kind == manifest.KindDir {
		r.touched[e.Path] = true
	}
}

// touchParent marks the directory holding path: adding or removing an
// entry moves its mtime.
func (r *refresher) touchParent(path string) {
	if k := strings.LastIndexByte(path, '/'); k >= 0 {
		r.touched[path[:k]] = true
	} else {
		r.touched[""] = true
	}
}

// keep decides whether the tree's entry t can stay as the staged copy of
// base entry b.
func (r *refresher) keep(b, t *manifest.Entry, covered bool, shared map[uint64]bool) (bool, error) {
	if b.Kind != t.Kind {
		return false, nil
	}
	switch b.Kind {
	case manifest.KindDir:
		// A directory is kept with its entries; one the command touched
		// (its ctime moved since staging), or one whose stat cannot tell
		// (changed within the state's timestamp step of the pooled walk),
		// is made as a fresh one would be: the user's own, no extended
		// attributes, the base's mode and times.
		if s, ok := r.p.source.Lookup(t.Path); !ok || s.Kind != manifest.KindDir || !covered || !r.stateClock.Proves(t.CtimeNs, r.p.TreeWalkNs) {
			r.scrub = append(r.scrub, t.Path)
			r.touched[t.Path] = true
		}
		return true, nil
	case manifest.KindSymlink:
		s, ok := r.p.source.Lookup(t.Path)
		return ok && s.Kind == manifest.KindSymlink && covered && t.Target == b.Target && t.MtimeNs == b.MtimeNs, nil
	case manifest.KindFile:
	default:
		return false, nil
	}
	// A file another tree path shares (a hard link the command made)
	// would carry a write to one path into the other.
	if shared[t.Ino] {
		return false, nil
	}
	// Only a file untouched since it was staged holds the bytes of a
	// known base version.
	if !covered {
		return false, nil
	}
	s, ok := r.p.source.Lookup(t.Path)
	if !ok || t.Mode != s.Mode || t.Size != s.Size || t.MtimeNs != s.MtimeNs {
		return false, nil
	}
	if s.Kind != b.Kind || s.Mode != b.Mode || s.Size != b.Size || s.MtimeNs != b.MtimeNs ||
		s.CtimeNs != b.CtimeNs || s.Ino != b.Ino || s.Dev != b.Dev {
		return false, nil
	}
	if r.stateClock.Proves(t.CtimeNs, r.p.TreeWalkNs) && r.baseClock.Proves(s.CtimeNs, r.p.SourceWalkNs) {
		return true, nil
	}
	// Stat cannot decide: the pooled walk came within a timestamp step of
	// the tree file's last change (a write after it in the same step, its
	// mtime kept as cp -p keeps it, moves no stat fact), or the base
	// version was measured within a step of its own last change. The
	// bytes decide.
	return r.sameBytes(b, t)
}

// sameBytes compares a base file's bytes with the tree's, both opened
// without following links. A tree file with a link elsewhere, or an
// extended attribute a command could set (made within the step its ctime
// cannot tell), is never the same: a write through the other name would
// reach the next transaction, and a fresh copy has neither.
func (r *refresher) sameBytes(b, t *manifest.Entry) (bool, error) {
	in, err := r.src.openFile(b.Path)
	if err != nil {
		return false, nil // the copy will say what is wrong with it
	}
	defer in.Close()
	out, err := os.OpenFile(r.dst(t.Path), sourceFlags, 0)
	if err != nil {
		return false, nil
	}
	defer out.Close()
	if n, err := linkCount(out); err != nil || n != 1 || hasSettableXattr(out) {
		return false, nil
	}
	x, y := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		n, errx := io.ReadFull(in, x)
		m, erry := io.ReadFull(out, y)
		if n != m || string(x[:n]) != string(y[:m]) {
			return false, nil
		}
		if errx == io.EOF || errx == io.ErrUnexpectedEOF {
			return erry == io.EOF || erry == io.ErrUnexpectedEOF, nil
		}
		if errx != nil || erry != nil {
			return false, nil
		}
	}
}

func (r *refresher) dst(rel string) string {
	return r.dir + string(filepath.Separator) + filepath.FromSlash(rel)
}

// apply removes what goes, makes what comes, and sets every touched
// directory back to the base's mode and times, deepest first.
func (r *refresher) apply(report func(done, total int)) error {
	for _, rel := range r.remove {
		p := r.dst(rel)
		// A command may have left a directory without write permission.
		if err := removeTree(r.ctx, p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("refresh staged workspace: remove %s: %w", quote(p), err)
		}
		r.stats.Removed++
	}
	for _, rel := range r.scrub {
		if err := scrubDir(r.dst(rel)); err != nil {
			return fmt.Errorf("refresh staged workspace: %w", err)
		}
	}
	sub := &manifest.Manifest{Entries: make([]manifest.Entry, len(r.create))}
	for k, i := range r.create {
		sub.Entries[k] = r.base.Entries[i]
	}
	c := newCopier(r.ctx, r.src, r.dir, sub, report)
	defer c.cancel(nil)
	defer c.meter.Done()
	if err := c.make(); err != nil {
		return err
	}
	// The copies may have found newer versions than the walk: the base
	// manifest records what was copied.
	for k, i := range r.create {
		r.base.Entries[i] = sub.Entries[k]
		switch sub.Entries[k].Kind {
		case manifest.KindFile:
			r.stats.Copied++
			r.stats.Bytes += sub.Entries[k].Size
			r.made[i] = c.staged[k]
		case manifest.KindSymlink:
			r.stats.Copied++
			r.made[i] = c.staged[k]
		}
	}
	fix := &manifest.Manifest{}
	for _, i := range r.dirs {
		fix.Entries = append(fix.Entries, r.base.Entries[i])
	}
	f := &copier{ctx: c.ctx, cancel: c.cancel, dir: r.dir, m: fix, now: time.Now().UnixNano(), staged: make([]manifest.Entry, len(fix.Entries))}
	f.meter = c.meter
	byDepth := map[int][]int{}
	deepest := 0
	for k := range fix.Entries {
		d := strings.Count(fix.Entries[k].Path, "/")
		byDepth[d] = append(byDepth[d], k)
		deepest = max(deepest, d)
	}
	for d := deepest; d >= 0; d-- {
		if err := f.each(f.byParent(byDepth[d]), false, f.fixDir); err != nil {
			return err
		}
	}
	for k, i := range r.dirs {
		r.made[i] = f.staged[k]
	}
	return fixRoot(r.dir, r.src.path)
}

// fixRoot sets the staged workspace dir's root as staging makes it from
// the base's root: the user's own, no extended attributes, the base's
// mode and times. The root's own facts are in no manifest, and no proof
// covers them: every refresh sets them.
func fixRoot(dir, base string) error {
	fi, err := os.Stat(base)
	if err != nil {
		return fmt.Errorf("stat base %s: %w", quote(base), unwrapPath(err))
	}
	if err := scrubDir(dir); err != nil {
		return fmt.Errorf("refresh staged workspace: %w", err)
	}
	if err := os.Chmod(dir, fi.Mode()&manifest.ModeMask); err != nil {
		return fmt.Errorf("set mode of staged workspace %s: %w", quote(dir), unwrapPath(err))
	}
	if err := setTimes(dir, time.Now().UnixNano(), fi.ModTime().UnixNano()); err != nil {
		return fmt.Errorf("set times of staged workspace %s: %w", quote(dir), err)
	}
	return nil
}

// stagedManifest is the refreshed tree's stat, entry for entry with the
// base manifest, as staging afresh would have measured it.
func (r *refresher) stagedManifest() (*manifest.Manifest, error) {
	out := &manifest.Manifest{Entries: make([]manifest.Entry, 0, len(r.base.Entries))}
	for i := range r.base.Entries {
		b := &r.base.Entries[i]
		if b.Kind == manifest.KindOther {
			continue
		}
		e, ok := r.made[i]
		if !ok {
			if r.kept[i] < 0 {
				return nil, fmt.Errorf("refresh staged workspace: %s was not staged", quote(b.Path))
			}
			e = r.tree.Entries[r.kept[i]]
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

// Unchanged is what Refresh returns for a tree at req.Dir that the caller
// proved is exactly staged, the tree staging made from base (a staged
// workspace's own manifests), where nothing changed in either since they
// were measured: no path was written in the tree, nor in the base (a
// watch of each that was whole the whole time: internal/pool). There is
// nothing to measure, copy or remove; only the root is set as Refresh sets
// it, and the digests that stat cannot stand in for at this moment are
// taken, as Refresh takes them (see Result). base and staged become the Result's, digested says a digest
// was added to them. The Refreshed counts every entry as kept.
func Unchanged(ctx context.Context, req Request, base, staged *manifest.Manifest) (res *Result, done *Refreshed, digested bool, err error) {
	if fi, err := os.Stat(req.Base); err != nil || !fi.IsDir() {
		return nil, nil, false, fmt.Errorf("stage %s: not a directory", quote(req.Base))
	}
	// The root, which no manifest and no watch's word covers (a command
	// or another process may have chmodded it, or set an attribute).
	if err := fixRoot(filepath.Clean(req.Dir), filepath.Clean(req.Base)); err != nil {
		return nil, nil, false, err
	}
	res = &Result{Base: base, Staged: staged, WalkNs: time.Now().UnixNano()}
	for i := range base.Entries {
		if base.Entries[i].Kind == manifest.KindOther {
			res.Warnings = append(res.Warnings, fmt.Sprintf("skipped %s %s: FIFOs, sockets and device nodes are not copied", specialKind(filepath.Join(req.Base, base.Entries[i].Path)), quote(base.Entries[i].Path)))
		}
	}
	before := digests(base) + digests(staged)
	if err := digestRacy(ctx, res, filepath.Clean(req.Dir), req); err != nil {
		return nil, nil, false, stopped(ctx, req.Base, err)
	}
	if req.Progress != nil {
		req.Progress(len(staged.Entries), len(staged.Entries))
	}
	return res, &Refreshed{Kept: len(staged.Entries)}, digests(base)+digests(staged) != before, nil
}

// digests counts the entries of m that carry a digest.
func digests(m *manifest.Manifest) int {
	n := 0
	for i := range m.Entries {
		if m.Entries[i].Digest != "" {
			n++
		}
	}
	return n
}
