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

// Pooled is a staged tree kept after its transaction settled, to be made
// the next transaction's workspace by Refresh instead of copying the whole
// base again.
type Pooled struct {
	// Tree loads the tree as it was measured when it was pooled (the walk
	// of the settling diff). A tree that differs from it now was written
	// after its transaction ended and is never reused. (Loaders, so that
	// the pooled manifests are in memory only while they are needed.)
	Tree func() (*manifest.Manifest, error)
	// TreeWalkNs is when that walk started: an entry whose ctime is not
	// older by the state file system's window (Request.StateClock) could
	// have been written again within the same timestamp step without a
	// trace, and its bytes are compared.
	TreeWalkNs int64
	// Source loads, for each pooled entry that was provably untouched
	// since it was staged, the base's stat facts of the very version its
	// bytes were copied from (PoolSource). A base file that still shows
	// exactly those facts still holds those bytes (ctime cannot be set by
	// any user call).
	Source func() (*manifest.Manifest, error)
	// SourceWalkNs is when the base was measured for Source: a source
	// entry whose ctime is not older by the base file system's window
	// (Request.BaseClock) proves nothing by stat alone, and its bytes are
	// compared.
	SourceWalkNs int64
	// Ignore reports paths of the tree that the pooled manifests did not
	// cover (agent noise the settling diff skipped): they are refreshed
	// like any other path, but their stat is no evidence of a late writer.
	Ignore func(rel string, isDir bool) bool
	// Since is when the tree's transaction opened: a process that cannot
	// be inspected and started later could be its command's (Holders).
	Since time.Time
	// Contained says every process of the tree's transaction had ended
	// when it was pooled, by construction (its command ran in a PID
	// namespace that ended with it): no process of it can reach the tree,
	// and Refresh does not look. Otherwise Refresh looks for holders
	// (Holders) before anything else, so that its proof that nothing wrote
	// the tree is taken when no holder was left.
	Contained bool

	source *manifest.Manifest // Source, once loaded
}

// PoolSource makes Pooled.Source for a settled tree: for each entry the
// settling walk found untouched since open, the base's stat facts of the
// version it was copied from. Untouched is every stat fact as staged,
// ctime included, and for a file staged too recently for its stat to
// prove that (its open entry carries a digest: see Result.Staged), its
// bytes as staged too: the settling diff compared them, and left the
// digest of what it read on the walked entry (changeset.Diff). A
// directory or symlink missing from it was touched by the command (a
// chmod, chown or extended attribute moves ctime too). base and open are
// the transaction's manifests from open (Result.Base, Result.Staged);
// walked is the settling walk, once the settling diff has run over it.
func PoolSource(base, open, walked *manifest.Manifest) *manifest.Manifest {
	out := &manifest.Manifest{Entries: make([]manifest.Entry, 0, len(walked.Entries))}
	for i := range walked.Entries {
		e := &walked.Entries[i]
		o, ok := open.Lookup(e.Path)
		if !ok || !manifest.SameStat(*o, *e) {
			continue
		}
		if o.Kind == manifest.KindFile && o.Digest != "" && e.Digest != o.Digest {
			continue
		}
		if b, ok := base.Lookup(e.Path); ok && b.Kind == e.Kind {
			out.Entries = append(out.Entries, *b)
		}
	}
	return out
}

// Refreshed says what Refresh did to a pooled tree.
type Refreshed struct {
	Kept    int   // entries left as they were
	Copied  int   // files and symlinks (re)made from the base
	Bytes   int64 // bytes of the files copied
	Removed int   // entries removed (a directory counts once)
}

// ErrPoolTouched is wrapped by Refresh's error when the pooled tree was
// written after it was pooled: it must be deleted, never reused.
var ErrPoolTouched = errors.New("the pooled tree was written after its transaction ended")

// ErrPoolHeld is wrapped by Refresh's error when a process can still reach
// the pooled tree (a dev server the last command left running).
var ErrPoolHeld = errors.New("a process can still reach the pooled tree")

// Refresh makes req.Dir, which holds a pooled tree, exactly what staging
// req.Base afresh would make it: the same paths, types, modes, mtimes,
// sizes, bytes and symlink targets, with no inode shared with the base or
// within the tree. Only what differs is copied; what the base no longer has
// (or req.Skip now leaves out) is removed. The Result is what Stage would
// return. The caller must have proved that no process holds the tree (see
// Holders); Refresh itself proves that nothing wrote it since it was
// pooled, and fails with ErrPoolTouched otherwise. On any error the tree
// is in an unknown state: the caller deletes it.
//
// For a tree whose transaction was not contained (Pooled.Contained), the
// caller need not look for holders: Refresh does, first.
func Refresh(ctx context.Context, req Request, p Pooled) (*Result, *Refreshed, error) {
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
	// One walk after the other (each keeps both cores busy), with the
	// pooled record decoded beside the first and the holders looked for
	// and the sources decoded beside the second; nothing in the tree is
	// touched before all of them are done. The pooled walk's record is
	// dropped before the base's manifest is made, which bounds the memory
	// a large tree takes.
	recDone := make(chan struct{})
	var rec *manifest.Manifest
	var recErr error
	go func() { defer close(recDone); rec, recErr = p.Tree() }()
	if !p.Contained {
		// Holders first: the walk below then proves the tree untouched
		// when no process that held it was left to write it after.
		<-recDone
		if recErr != nil {
			return nil, nil, fmt.Errorf("%w: its record cannot be read: %v", ErrPoolTouched, recErr)
		}
		if err := free(dir, rec, p.Since); err != nil {
			return nil, nil, err
		}
	}
	tree, err := manifest.Walk(ctx, dir, manifest.WalkOptions{})
	<-recDone
	if err != nil {
		return nil, nil, fmt.Errorf("measure pooled tree: %w", err)
	}
	if recErr != nil {
		return nil, nil, fmt.Errorf("%w: its record cannot be read: %v", ErrPoolTouched, recErr)
	}
	covered, err := untouched(rec, p.Ignore, tree)
	if err != nil {
		return nil, nil, err
	}
	rec = nil
	var srcErr error
	var wg sync.WaitGroup
	wg.Go(func() { p.source, srcErr = p.Source() })
	walkNs := time.Now().UnixNano()
	m, err := manifest.Walk(ctx, base, manifest.WalkOptions{Skip: req.Skip})
	wg.Wait()
	if err != nil {
		return nil, nil, stopped(ctx, base, err)
	}
	if srcErr != nil {
		return nil, nil, fmt.Errorf("pooled tree's record: %w", srcErr)
	}
	src, err := openSource(base)
	if err != nil {
		return nil, nil, err
	}
	defer src.close()
	r := &refresher{ctx: ctx, src: src, dir: dir, base: m, tree: tree, covered: covered, p: p, touched: map[string]bool{},
		stateClock: req.StateClock, baseClock: req.BaseClock}
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

// free proves that no process can reach the tree any more (see Holders):
// its root, and every inode tree (the pooled record) names.
func free(dir string, tree *manifest.Manifest, since time.Time) error {
	list := make([]FileID, 0, len(tree.Entries)+1)
	root, err := manifest.Lstat(dir)
	if err != nil {
		return fmt.Errorf("measure pooled tree: %w", err)
	}
	list = append(list, FileID{root.Dev, root.Ino})
	for i := range tree.Entries {
		list = append(list, FileID{tree.Entries[i].Dev, tree.Entries[i].Ino})
	}
	hs, err := Holders(dir, NewFileIDs(list), since)
	if err != nil {
		return err
	}
	if len(hs) > 0 {
		return fmt.Errorf("%w: %s", ErrPoolHeld, hs[0])
	}
	return nil
}

// untouched proves that nothing wrote the tree since it was pooled: every
// entry the pooled walk saw is there with the same stat facts, and nothing
// is there that it did not see, apart from paths it did not cover.
// It reports which entries of now the pooled walk covered.
func untouched(rec *manifest.Manifest, ignore func(string, bool) bool, now *manifest.Manifest) ([]bool, error) {
	covered := make([]bool, len(now.Entries))
	i, j := 0, 0
	was, is := rec.Entries, now.Entries
	for i < len(was) || j < len(is) {
		switch {
		case j == len(is) || (i < len(was) && was[i].Path < is[j].Path):
			return nil, fmt.Errorf("%w: %s is gone", ErrPoolTouched, quote(was[i].Path))
		case i == len(was) || is[j].Path < was[i].Path:
			if ignore == nil || !ignored(ignore, is[j]) {
				return nil, fmt.Errorf("%w: %s appeared", ErrPoolTouched, quote(is[j].Path))
			}
			j++
		default:
			if !manifest.SameStat(was[i], is[j]) {
				return nil, fmt.Errorf("%w: %s changed", ErrPoolTouched, quote(is[j].Path))
			}
			covered[j] = true
			i++
			j++
		}
	}
	return covered, nil
}

// ignored reports whether e lies in a part of the tree the pooled walk
// skipped: e itself or one of its parent directories matches.
func ignored(skip func(string, bool) bool, e manifest.Entry) bool {
	if skip(e.Path, e.Kind == manifest.KindDir) {
		return true
	}
	for p := e.Path; ; {
		k := strings.LastIndexByte(p, '/')
		if k < 0 {
			return false
		}
		p = p[:k]
		if skip(p, true) {
			return true
		}
	}
}

type refresher struct {
	ctx  context.Context
	src  *source
	dir  string
	base *manifest.Manifest // the base now, as staged (updated by copies)
	tree *manifest.Manifest // the pooled tree now
	// covered[j] says tree entry j is as the pooled walk saw it (untouched).
	covered []bool
	p       Pooled
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
		if _, ok := r.p.source.Lookup(t.Path); !ok || !covered || !r.stateClock.Proves(t.CtimeNs, r.p.TreeWalkNs) {
			r.scrub = append(r.scrub, t.Path)
			r.touched[t.Path] = true
		}
		return true, nil
	case manifest.KindSymlink:
		_, ok := r.p.source.Lookup(t.Path)
		return ok && covered && t.Target == b.Target && t.MtimeNs == b.MtimeNs, nil
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
	// The root's own facts are in no manifest: set them always, as
	// staging does.
	fi, err := os.Stat(r.src.path)
	if err != nil {
		return fmt.Errorf("stat base %s: %w", quote(r.src.path), unwrapPath(err))
	}
	if err := scrubDir(r.dir); err != nil {
		return fmt.Errorf("refresh staged workspace: %w", err)
	}
	if err := os.Chmod(r.dir, fi.Mode()&manifest.ModeMask); err != nil {
		return fmt.Errorf("set mode of staged workspace %s: %w", quote(r.dir), unwrapPath(err))
	}
	if err := setTimes(r.dir, time.Now().UnixNano(), fi.ModTime().UnixNano()); err != nil {
		return fmt.Errorf("set times of staged workspace %s: %w", quote(r.dir), err)
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
