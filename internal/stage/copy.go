package stage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/airlockdev/airlock/internal/filecopy"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/progress"
	"github.com/airlockdev/airlock/internal/safefs"
)

// copyBackend stages by copying every byte of data, keeping holes
// (filecopy). It works on any file system; on Linux the data goes through
// copy_file_range, which btrfs and XFS answer with a reflink, so the copy
// is cheap there too.
type copyBackend struct{}

func (copyBackend) Name() string { return Copy }

func (copyBackend) Supported(string) (bool, string) { return true, "" }

func (copyBackend) Remove(ctx context.Context, dir string) error { return removeTree(ctx, dir) }

func (copyBackend) Stage(ctx context.Context, req Request) (*Result, error) {
	return stageCopy(ctx, req, false)
}

const (
	// copyRetries is how many times a file that changed while it was being
	// copied is copied again before staging gives up.
	copyRetries = 3
	// progressEvery spaces Progress calls.
	progressEvery = 200 * time.Millisecond
)

// copyWorkers bounds the files copied at once, and so the memory and file
// descriptors in use. Copying is I/O-bound: more workers than cores keep
// the disk queue busy.
var copyWorkers = max(8, min(32, runtime.GOMAXPROCS(0)*4))

// Test hooks; nil outside tests.
var (
	testHookWalked func()                        // after the base is measured, before anything is staged
	testHookOpen   func(rel string) error        // an error to return instead of opening a source file
	testHookCopied func(rel string, attempt int) // after a file's bytes are copied, before the copy is checked
)

// stageCopy stages by copying bytes, or with clone set by cloning every
// file (reflink), which fails rather than fall back to copying.
func stageCopy(ctx context.Context, req Request, clone bool) (res *Result, err error) {
	if !filepath.IsAbs(req.Base) || !filepath.IsAbs(req.Dir) {
		return nil, fmt.Errorf("stage %s into %s: both paths must be absolute", quote(req.Base), quote(req.Dir))
	}
	base, dir := filepath.Clean(req.Base), filepath.Clean(req.Dir)
	if dir == base || strings.HasPrefix(dir, base+string(filepath.Separator)) {
		return nil, fmt.Errorf("cannot stage %s into %s: the staged workspace would lie inside the base", quote(base), quote(dir))
	}
	root, err := os.Stat(base)
	if err != nil {
		return nil, fmt.Errorf("stage %s: %w", quote(base), unwrapPath(err))
	}
	if !root.IsDir() {
		return nil, fmt.Errorf("stage %s: not a directory", quote(base))
	}
	walkNs := time.Now().UnixNano()
	m, err := manifest.Walk(ctx, base, manifest.WalkOptions{Skip: req.Skip})
	if err != nil {
		return nil, stopped(ctx, base, err)
	}
	if testHookWalked != nil {
		testHookWalked()
	}
	src, err := openSource(base)
	if err != nil {
		return nil, err
	}
	defer src.close()
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("staged workspace %s already exists; choose another transaction id or remove it", quote(dir))
		}
		return nil, fmt.Errorf("create staged workspace %s: %w", quote(dir), unwrapPath(err))
	}
	defer func() {
		if err != nil {
			if rerr := removeTree(context.WithoutCancel(ctx), dir); rerr != nil {
				err = fmt.Errorf("%w (and removing the partial staged workspace failed: %v)", err, rerr)
			}
		}
	}()

	c := newCopier(ctx, src, dir, m, req.Progress)
	c.clone = clone
	defer c.cancel(nil)
	defer c.meter.Done()
	if err := c.run(root); err != nil {
		return nil, stopped(ctx, base, err)
	}
	staged := c.stagedManifest()
	warnings, err := c.check(staged)
	if err != nil {
		return nil, err
	}
	res = &Result{Base: m, Staged: staged, Warnings: append(c.warnings, warnings...), WalkNs: walkNs}
	if err := digestRacy(ctx, res, dir, req); err != nil {
		return nil, stopped(ctx, base, err)
	}
	if req.Progress != nil {
		req.Progress(c.total, c.total)
	}
	return res, nil
}

// stopped turns a failure caused by the caller's cancellation into one
// message; other errors already say what failed.
func stopped(ctx context.Context, base string, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("staging %s stopped: %w", quote(base), context.Cause(ctx))
	}
	return err
}

// copier stages one tree. Entries of the base manifest are updated in place
// (each by the one worker that copies it) when the copy finds a newer
// version than the walk did.
type copier struct {
	ctx      context.Context
	cancel   context.CancelCauseFunc
	src      *source
	dir      string
	m        *manifest.Manifest
	now      int64 // staging time, used as every staged atime
	progress func(done, total int)
	clone    bool             // clone files (reflink) instead of copying their bytes
	staged   []manifest.Entry // staged[i] is the staged copy of m.Entries[i], once made
	meter    *progress.Task

	dirs     [][]int // indices of directories, by depth
	files    []int
	links    []int
	total    int
	done     atomic.Int64
	warnings []string // written before the workers start
}

func newCopier(ctx context.Context, src *source, dir string, m *manifest.Manifest, report func(int, int)) *copier {
	c := &copier{src: src, dir: dir, m: m, now: time.Now().UnixNano(), progress: report, staged: make([]manifest.Entry, len(m.Entries))}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	for i := range m.Entries {
		e := &m.Entries[i]
		switch e.Kind {
		case manifest.KindDir:
			d := strings.Count(e.Path, "/")
			for len(c.dirs) <= d {
				c.dirs = append(c.dirs, nil)
			}
			c.dirs[d] = append(c.dirs[d], i)
		case manifest.KindFile:
			c.files = append(c.files, i)
		case manifest.KindSymlink:
			c.links = append(c.links, i)
		case manifest.KindOther:
			c.warnings = append(c.warnings, fmt.Sprintf("skipped %s %s: FIFOs, sockets and device nodes are not copied", specialKind(src.abs(e.Path)), quote(e.Path)))
		}
	}
	c.total = len(c.files) + len(c.links)
	for _, l := range c.dirs {
		c.total += len(l)
	}
	var bytes int64
	for _, i := range c.files {
		bytes += m.Entries[i].Size
	}
	c.meter = progress.Start(ctx, "staging", c.total, bytes)
	return c
}

// run stages the tree: directories first, parents before children, so
// every file has a place to go; then files and symlinks; then directory
// modes and times, deepest first, because creating an entry moves its
// parent's mtime and a read-only parent would refuse it.
func (c *copier) run(root fs.FileInfo) error {
	if c.progress != nil {
		stop := c.report()
		defer stop()
	}
	if err := c.make(); err != nil {
		return err
	}
	for d := len(c.dirs) - 1; d >= 0; d-- {
		if err := c.each(c.byParent(c.dirs[d]), false, c.fixDir); err != nil {
			return err
		}
	}
	if err := os.Chmod(c.dir, root.Mode()&manifest.ModeMask); err != nil {
		return fmt.Errorf("set mode of staged workspace %s: %w", quote(c.dir), unwrapPath(err))
	}
	if err := setTimes(c.dir, c.now, root.ModTime().UnixNano()); err != nil {
		return fmt.Errorf("set times of staged workspace %s: %w", quote(c.dir), err)
	}
	return nil
}

// make creates the manifest's entries: directories first, parents before
// children, so every file has a place to go; then files and symlinks.
func (c *copier) make() error {
	for _, level := range c.dirs {
		if err := c.each(c.byParent(level), true, c.mkdir); err != nil {
			return err
		}
	}
	if err := c.each(c.byParent(c.files), true, c.copyFile); err != nil {
		return err
	}
	return c.each(c.byParent(c.links), true, c.symlink)
}

// groupMax bounds a group of entries one worker handles in a row, so that
// a directory of many thousand files still spreads over the workers.
const groupMax = 512

// byParent groups entries by their parent directory, in groups of at most
// groupMax. Workers take whole groups: entries made in one directory by
// several workers at once contend for that directory's lock, and on ext4
// the kernel then spins, costing several times the work itself.
func (c *copier) byParent(idx []int) [][]int {
	at := map[string]int{}
	var groups [][]int
	for _, i := range idx {
		p := c.m.Entries[i].Path
		parent := ""
		if k := strings.LastIndexByte(p, '/'); k >= 0 {
			parent = p[:k]
		}
		g, ok := at[parent]
		if !ok || len(groups[g]) >= groupMax {
			g = len(groups)
			at[parent] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// each runs fn over the entries of groups on a bounded pool of workers,
// one group at a time per worker. The first error cancels the rest and is
// the one returned.
func (c *copier) each(groups [][]int, counted bool, fn func(e, staged *manifest.Entry) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(copyWorkers, len(groups)) {
		wg.Go(func() {
			for c.ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= len(groups) {
					return
				}
				for _, i := range groups[k] {
					if c.ctx.Err() != nil {
						return
					}
					if err := fn(&c.m.Entries[i], &c.staged[i]); err != nil {
						c.cancel(err)
						return
					}
					if counted {
						c.done.Add(1)
						c.meter.Add(1, 0)
					}
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(c.ctx)
}

// report calls progress from one goroutine until stop is called.
func (c *copier) report() (stop func()) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		last := -1
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if d := int(c.done.Load()); d != last {
					c.progress(d, c.total)
					last = d
				}
			}
		}
	}()
	return func() { close(quit); <-finished }
}

func (c *copier) dst(rel string) string {
	return c.dir + string(filepath.Separator) + filepath.FromSlash(rel)
}

// mkdir creates a directory owner-only, so that staging can fill it
// whatever its final mode; fixDir sets that mode.
func (c *copier) mkdir(e, _ *manifest.Entry) error {
	if err := os.Mkdir(c.dst(e.Path), 0o700); err != nil {
		return fmt.Errorf("create staged directory %s: %w", quote(c.dst(e.Path)), unwrapPath(err))
	}
	return nil
}

func (c *copier) fixDir(e, staged *manifest.Entry) error {
	p := c.dst(e.Path)
	// Only what differs is set: each call moves the ctime, and a
	// directory of a recycled tree whose ctime moved after its tree was
	// measured is scrubbed and fixed again by the next refresh.
	now, err := manifest.Lstat(p)
	if err != nil || now.Kind != manifest.KindDir || now.Mode != e.Mode {
		if err := os.Chmod(p, e.Mode); err != nil {
			return fmt.Errorf("set mode of staged directory %s: %w", quote(p), unwrapPath(err))
		}
	}
	if err != nil || now.Kind != manifest.KindDir || now.MtimeNs != e.MtimeNs {
		if err := setTimes(p, c.now, e.MtimeNs); err != nil {
			return fmt.Errorf("set times of staged directory %s: %w", quote(p), err)
		}
	}
	// Its children were all made before: this is its final stat.
	return c.measure(p, e.Path, staged)
}

// measure records a staged path's final stat facts, so that the staged
// tree need not be walked again once it is made.
func (c *copier) measure(p, rel string, staged *manifest.Entry) error {
	m, err := manifest.Lstat(p)
	if err != nil {
		return fmt.Errorf("measure staged %s: %w", quote(p), unwrapPath(err))
	}
	m.Path = rel
	*staged = m
	return nil
}

// stagedManifest is the staged tree as staging left it: the stat each
// entry had once its mode and times were set, in the base manifest's
// (path) order.
func (c *copier) stagedManifest() *manifest.Manifest {
	out := &manifest.Manifest{Entries: make([]manifest.Entry, 0, len(c.staged))}
	for i := range c.staged {
		if c.m.Entries[i].Kind != manifest.KindOther {
			out.Entries = append(out.Entries, c.staged[i])
		}
	}
	return out
}

// symlink recreates a link with the target it has now, which is also what
// the base entry records, so the two agree even if the link changed since
// the walk.
func (c *copier) symlink(e, staged *manifest.Entry) error {
	cur, err := manifest.Lstat(c.src.abs(e.Path))
	if err != nil {
		return sourceErr(c.src.abs(e.Path), err)
	}
	if cur.Kind != manifest.KindSymlink {
		return changedType(c.src.abs(e.Path))
	}
	p := c.dst(e.Path)
	if err := os.Symlink(cur.Target, p); err != nil {
		return fmt.Errorf("create staged symlink %s: %w", quote(p), unwrapPath(err))
	}
	if err := setTimes(p, c.now, cur.MtimeNs); err != nil {
		return fmt.Errorf("set times of staged symlink %s: %w", quote(p), err)
	}
	cur.Path = e.Path
	*e = cur
	return c.measure(p, e.Path, staged)
}

// copyFile copies one regular file's bytes into a new file (never a hard
// link), then its mode, then its mtime: writing clears setuid and setgid,
// and chmod leaves mtime alone.
func (c *copier) copyFile(e, staged *manifest.Entry) error {
	p := c.dst(e.Path)
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("create staged file %s: %w", quote(p), unwrapPath(err))
	}
	defer func() { out.Close() }()
	for attempt := 0; ; attempt++ {
		copied, changed, err := c.copyOnce(e.Path, &out, p, attempt)
		if err != nil {
			return err
		}
		if !changed {
			// The fstat of the open source describes the bytes copied.
			// It equals the walk's entry unless the file changed after
			// the walk, and then it is the truth about what was staged.
			copied.Path = e.Path
			*e = copied
			break
		}
		if attempt == copyRetries {
			return fmt.Errorf("%s: kept changing while airlock copied it; retry when it is quiet", quote(c.src.abs(e.Path)))
		}
		// The next attempt's copy (or clone) empties the file first.
	}
	if err := out.Chmod(e.Mode); err != nil {
		return fmt.Errorf("set mode of staged file %s: %w", quote(p), unwrapPath(err))
	}
	if err := setFileTimes(out, p, c.now, e.MtimeNs); err != nil {
		return fmt.Errorf("set times of staged file %s: %w", quote(p), err)
	}
	final, err := fstat(out)
	if err != nil {
		return fmt.Errorf("stat staged file %s: %w", quote(p), err)
	}
	final.Path = e.Path
	*staged = final
	c.meter.Add(0, e.Size)
	return nil
}

// copyOnce copies the source's current bytes to *out (cloning them with
// c.clone, which may replace *out) and reports the source's stat before
// the copy and whether it changed during it.
func (c *copier) copyOnce(rel string, out **os.File, p string, attempt int) (manifest.Entry, bool, error) {
	abs := c.src.abs(rel)
	var in *os.File
	var err error
	if testHookOpen != nil {
		err = testHookOpen(rel)
	}
	if err == nil {
		in, err = c.src.openFile(rel)
	}
	if err != nil {
		return manifest.Entry{}, false, sourceErr(abs, err)
	}
	defer in.Close()
	before, err := fstat(in)
	if err != nil {
		return manifest.Entry{}, false, fmt.Errorf("stat %s: %w", quote(abs), err)
	}
	if before.Kind != manifest.KindFile {
		return manifest.Entry{}, false, changedType(abs)
	}
	if c.clone {
		f, err := cloneInto(*out, in, p)
		if f != nil {
			*out = f
		}
		if err != nil {
			return manifest.Entry{}, false, cloneErr(abs, p, err)
		}
	} else if _, err := filecopy.Copy(c.ctx, *out, in, filecopy.Options{}); err != nil {
		if c.ctx.Err() != nil {
			return manifest.Entry{}, false, err
		}
		return manifest.Entry{}, false, fmt.Errorf("copy %s: %w", quote(abs), unwrapPath(err))
	}
	if testHookCopied != nil {
		testHookCopied(rel, attempt)
	}
	after, err := fstat(in)
	if err != nil {
		return manifest.Entry{}, false, fmt.Errorf("stat %s: %w", quote(abs), err)
	}
	return before, !manifest.SameStat(before, after), nil
}

func fstat(f *os.File) (manifest.Entry, error) {
	fi, err := f.Stat()
	if err != nil {
		return manifest.Entry{}, unwrapPath(err)
	}
	return manifest.FromFileInfo(fi), nil
}

// sourceErr says why a base path the walk saw could not be staged.
func sourceErr(abs string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: vanished while airlock copied it; retry when nothing is deleting files there", quote(abs))
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: cannot be read (%w); fix its permissions or --exclude it", quote(abs), unwrapPath(err))
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENOTDIR):
		// O_NOFOLLOW met a symlink, or openat2 met one on the way.
		return changedType(abs)
	}
	return fmt.Errorf("copy %s: %w", quote(abs), unwrapPath(err))
}

func changedType(abs string) error {
	return fmt.Errorf("%s: changed type while airlock copied it; retry when it is quiet", quote(abs))
}

// specialKind names the type of a path that is not staged.
func specialKind(abs string) string {
	fi, err := os.Lstat(abs)
	if err != nil {
		return "a special file"
	}
	return safefs.TypeName(fi.Mode())
}

// check holds the staged tree to what was staged: the same paths, kinds,
// sizes and symlink targets, and no shared inode. (mtimes are left out: a
// staged tree on a file system with coarser timestamps cannot keep them.) A difference
// would later read as a change the command made, or let a staged write
// reach the base. A mode the system would not set (setgid for a group the
// user is not in) is only a warning: the tree is usable, but a commit would
// apply the staged mode.
func (c *copier) check(staged *manifest.Manifest) ([]string, error) {
	var warnings []string
	s := staged.Entries
	j := 0
	for i := range c.m.Entries {
		b := &c.m.Entries[i]
		if b.Kind == manifest.KindOther {
			continue
		}
		if j < len(s) && s[j].Path < b.Path {
			return nil, unexpected(c.dst(s[j].Path), "appeared in the staged workspace while it was being made")
		}
		if j >= len(s) || s[j].Path != b.Path {
			return nil, unexpected(c.dst(b.Path), "is missing from the staged workspace")
		}
		t := &s[j]
		j++
		switch {
		case t.Kind != b.Kind || t.Target != b.Target || (b.Kind == manifest.KindFile && t.Size != b.Size):
			return nil, unexpected(c.dst(b.Path), "differs from the base in type, size or target after staging")
		case b.Kind != manifest.KindDir && t.Dev == b.Dev && t.Ino == b.Ino:
			return nil, unexpected(c.dst(b.Path), "shares an inode with the base")
		case b.Kind != manifest.KindSymlink && t.Mode != b.Mode:
			warnings = append(warnings, fmt.Sprintf("kept mode %s for %s instead of %s: the system did not allow it; a commit would apply %s", safefs.Octal(t.Mode), quote(b.Path), safefs.Octal(b.Mode), safefs.Octal(t.Mode)))
		}
	}
	if j < len(s) {
		return nil, unexpected(c.dst(s[j].Path), "appeared in the staged workspace while it was being made")
	}
	return warnings, nil
}

func unexpected(path, what string) error {
	return fmt.Errorf("staging failed: %s %s; remove anything else writing there and retry", quote(path), what)
}
