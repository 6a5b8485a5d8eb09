package journal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/airlockdev/airlock/internal/filecopy"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// RestoreResult reports what Restore did.
type RestoreResult struct {
	// Digest is the tree digest of the journaled paths as they now are; it
	// equals BeforeDigest, which Restore computed from the journal.
	Digest, BeforeDigest string
	// Unreachable lists journaled paths that could only be reached
	// through a symlink (a directory on the way, not itself journaled, was
	// swapped for one). Restore then fails and keeps the journal.
	Unreachable []string
	// Displaced lists content found at a journaled path that was neither
	// the state before nor the state after the apply (someone wrote there
	// after the crash). It was saved in the journal's displaced directory
	// before the path was restored.
	Displaced []string
	// Edited lists journaled paths put back as the very file they held
	// before the apply (same inode) that another process wrote to or
	// chmod'ed during the commit: what it wrote stays in place. The digest
	// proof covers every other path.
	Edited []string
	// KeptDirs lists directories the apply created that now hold entries
	// airlock did not write: they stay, with those entries, and are left
	// out of the proof.
	KeptDirs []string
}

// Notes says, one line each, what a restore kept of others' writes in the
// base itself (Displaced lists what it saved aside).
func (r *RestoreResult) Notes() []string {
	var n []string
	for _, p := range r.Edited {
		n = append(n, p+": the very file is back in place, with what another process wrote to it during the commit")
	}
	for _, p := range r.KeptDirs {
		n = append(n, p+"/: kept, with the entries another process put in it during the commit")
	}
	return n
}

// Restore puts every journaled path back to its state before the apply,
// whether the apply finished, stopped half-way, or never began. dir is the
// journal's directory. Temporary entries the transaction left in the base
// are removed. The result is verified path by path against the journal.
func Restore(ctx context.Context, root *safefs.Root, j *Journal, dir string) (*RestoreResult, error) {
	return restoreOps(ctx, root, j, dir, nil)
}

// RestoreDone undoes an apply that failed in this very process: only the
// paths it reports done are put back. A path the apply had not reached yet
// is left as it is, even if someone changed it meanwhile: that change is
// theirs, and it stays.
func RestoreDone(ctx context.Context, root *safefs.Root, j *Journal, dir string, done []string) (*RestoreResult, error) {
	only := make(map[string]bool, len(done))
	for _, p := range done {
		only[p] = true
	}
	return restoreOps(ctx, root, j, dir, only)
}

// restoreOps undoes j's operations (those whose path only holds, when only
// is not nil) in phases, each a method of restorer, and verifies the result.
func restoreOps(ctx context.Context, root *safefs.Root, j *Journal, dir string, only map[string]bool) (*RestoreResult, error) {
	if err := checkBackups(j, dir); err != nil {
		return nil, err
	}
	released, err := releasedOps(dir)
	if err != nil {
		return nil, err
	}
	var fss *safefs.FSSync
	if len(j.Ops) >= safefs.FSSyncMin {
		// Opened before the first write: see apply.
		if fss, err = root.FSSync(); err != nil {
			return nil, err
		}
		defer fss.Close()
	}
	r := &restorer{ctx: ctx, root: root, j: j, dir: dir, only: only, released: released,
		res: &RestoreResult{}, touched: map[string]bool{}, kinds: beforeKinds(j.Ops),
		kept: map[int]bool{}, edited: map[int]bool{}}
	if r.orig, err = sweepTemps(root, j, dir, r.res, r.in, r.isOrig); err != nil {
		return nil, err
	}
	// Deepest first, take away what the apply made; shallowest first, put
	// back what was there; then the originals no path needs go, and the
	// directories get their modes back, deepest first.
	if err := r.removeMade(); err != nil {
		return nil, err
	}
	if err := r.putBack(); err != nil {
		return nil, err
	}
	if err := r.dropUnneeded(); err != nil {
		return nil, err
	}
	if err := r.resetDirModes(); err != nil {
		return nil, err
	}
	if err := syncTouched(root, fss, r.touched); err != nil {
		return nil, err
	}
	// Prove it: every path reachable and as before, and the digest over
	// them equal.
	if err := r.checkReachable(); err != nil {
		return nil, err
	}
	if err := r.verify(); err != nil {
		return nil, err
	}
	return r.res, nil
}

// restorer is one restore in progress: the journal it undoes, and what its
// phases learn for the ones after.
type restorer struct {
	ctx  context.Context
	root *safefs.Root
	j    *Journal
	dir  string
	only map[string]bool // the paths to restore; nil: every one
	// released[i]: the apply let operation i's original go (its inode
	// number may since name another file).
	released map[int]bool
	kinds    map[string]manifest.Kind // each journaled path's kind before

	res     *RestoreResult
	touched map[string]bool // directories whose entries changed: synced at the end
	orig    map[int]string  // originals the apply moved aside, by operation (sweepTemps)
	kept    map[int]bool    // directories left for what others put in them
	edited  map[int]bool    // originals back in place with others' writes
}

// in reports whether operation i is to be restored.
func (r *restorer) in(i int) bool { return r.only == nil || r.only[r.j.Ops[i].Path] }

// isOrig, for operation i: the entry is the very one the path held
// before, unless the apply let that one go.
func (r *restorer) isOrig(i int, cur manifest.Entry) bool {
	return !r.released[i] && isOriginal(cur, r.j.Ops[i].Before)
}

// removeMade takes away, deepest first, what the apply created where
// something of another kind, or nothing, was before.
func (r *restorer) removeMade() error {
	for i := len(r.j.Ops) - 1; i >= 0; i-- {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if !r.in(i) {
			continue
		}
		op := &r.j.Ops[i]
		cur, err := measureIn(r.root, op.Path, r.kinds)
		if escaped(err) {
			// A directory on the way is a symlink now; if it is journaled
			// too, the next phase puts it back and this path is reached
			// then. Nothing is ever written through the symlink.
			continue
		}
		if err != nil {
			return err
		}
		if cur.Kind == manifest.KindNone || !mustRemove(op.Before.Kind, cur.Kind) {
			continue
		}
		removed, err := r.removeOne(i, cur)
		if err != nil {
			return err
		}
		if removed {
			r.touched[parent(op.Path)] = true
		}
	}
	return nil
}

// removeOne takes away what operation i's path holds now (cur), and
// reports whether it did: a directory someone put their own files in stays.
func (r *restorer) removeOne(i int, cur manifest.Entry) (bool, error) {
	op := &r.j.Ops[i]
	if cur.Kind != manifest.KindDir {
		// Moved out by rename, then examined: an edit that reaches it
		// after the look is in the moved file, never unlinked unseen.
		tmp := opName(r.j.TxID, i, op.Path)
		if err := r.root.Rename(op.Path, tmp); err != nil {
			return false, err
		}
		return true, settleOut(r.root, r.j, i, tmp, r.dir, r.res)
	}
	err := r.root.RemoveDir(op.Path)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, syscall.ENOTEMPTY) && !errors.Is(err, syscall.EEXIST) {
		return false, err
	}
	if op.Before.Kind != manifest.KindNone {
		return false, fmt.Errorf("restore %s: the directory holds paths airlock did not write, and a %s must go back in its place; move them out and run recover again", filepath.Join(r.root.Path(), op.Path), op.Before.Kind)
	}
	// Someone put their own files in a directory the apply made: the
	// directory stays for them.
	r.kept[i] = true
	r.res.KeptDirs = append(r.res.KeptDirs, op.Path)
	return false, nil
}

// putBack puts back, shallowest first, what each path held before.
func (r *restorer) putBack() error {
	for i := range r.j.Ops {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if !r.in(i) {
			continue
		}
		op := &r.j.Ops[i]
		if op.Before.Kind == manifest.KindNone {
			continue
		}
		cur, err := measure(r.root, op.Path)
		if escaped(err) {
			continue // reported by the verification
		}
		if err != nil {
			return err
		}
		if r.isOrig(i, cur) {
			// The very file (or symlink) the path held before: never
			// replaced by a copy, so that a process holding it open
			// keeps writing into the tree. Only airlock's own change to
			// it, a mode set in place, is undone.
			if err := undoInPlace(r.root, op, cur); err != nil {
				return err
			}
			if matches(r.root, op.Path, op.Before) != nil {
				r.edited[i] = true
			}
			r.touched[parent(op.Path)] = true
			continue
		}
		if matches(r.root, op.Path, op.Before) == nil {
			continue
		}
		r.touched[parent(op.Path)] = true
		if err := r.putBackOne(i, cur); err != nil {
			return err
		}
	}
	return nil
}

// putBackOne makes operation i's path what it was before, where it holds
// something else now (cur): a directory made again, or the original entry
// swapped back in (a copy from the backup when it is gone).
func (r *restorer) putBackOne(i int, cur manifest.Entry) error {
	op := &r.j.Ops[i]
	switch op.Before.Kind {
	case manifest.KindDir:
		if cur.Kind == manifest.KindNone {
			if err := r.root.Mkdir(op.Path, 0o700); err != nil {
				return err
			}
		}
		r.touched[op.Path] = true
	case manifest.KindSymlink, manifest.KindFile:
		// The very entry the apply moved aside goes back if it is still
		// there; else a copy from the backup.
		src := r.orig[i]
		if src == "" {
			src = opName(r.j.TxID, i, op.Path)
			if err := recreate(r.root, r.j, op, src, r.dir); err != nil {
				return err
			}
		}
		delete(r.orig, i)
		out, err := swapIn(r.root, src, op.Path)
		if err != nil {
			return err
		}
		if out != "" {
			if err := settleOut(r.root, r.j, i, out, r.dir, r.res); err != nil {
				return err
			}
		}
		if matches(r.root, op.Path, op.Before) != nil {
			r.edited[i] = true // the original, written to while aside
		}
	}
	return nil
}

// dropUnneeded removes the original entries of paths that already held
// their before state: the same content, not needed.
func (r *restorer) dropUnneeded() error {
	for _, name := range r.orig {
		if err := r.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// resetDirModes gives every restored directory its mode before, deepest
// first.
func (r *restorer) resetDirModes() error {
	for i := len(r.j.Ops) - 1; i >= 0; i-- {
		op := &r.j.Ops[i]
		if r.in(i) && op.Before.Kind == manifest.KindDir {
			if err := r.root.Chmod(op.Path, op.Before.Mode); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkReachable fails unless every restored path can be reached without
// a symlink on the way.
func (r *restorer) checkReachable() error {
	for i, op := range r.j.Ops {
		if !r.in(i) {
			continue
		}
		if _, err := measureIn(r.root, op.Path, r.kinds); escaped(err) {
			r.res.Unreachable = append(r.res.Unreachable, op.Path)
		}
	}
	if len(r.res.Unreachable) > 0 {
		// Fail closed: the backups of these paths are the only copies of
		// their content before the apply; the journal must stay.
		return fmt.Errorf("restore of %s cannot reach %s: a directory on the way was replaced by a symlink (airlock never writes through one); put that directory back and run airlock recover again", r.root.Path(), strings.Join(quoted(r.res.Unreachable), ", "))
	}
	return nil
}

// verify proves every restored path as it was before (an edited original
// by its identity), and the digest over them equal to the journal's.
func (r *restorer) verify() error {
	var before, now []manifest.Entry
	for i, op := range r.j.Ops {
		if !r.in(i) || r.kept[i] {
			continue
		}
		if r.edited[i] {
			// Proved by identity instead: the very file is back.
			cur, err := measure(r.root, op.Path)
			if err != nil {
				return err
			}
			if !r.isOrig(i, cur) {
				return fmt.Errorf("verify %s after restore: it is no longer the file it was before the apply", filepath.Join(r.root.Path(), op.Path))
			}
			r.res.Edited = append(r.res.Edited, op.Path)
			continue
		}
		if op.Before.Kind == manifest.KindNone && Shadowed(op.Path, r.kinds) {
			// Absent by construction: its parent is a symlink or file again.
			continue
		}
		if err := matches(r.root, op.Path, op.Before); err != nil {
			return fmt.Errorf("verify %s after restore: %w", filepath.Join(r.root.Path(), op.Path), err)
		}
		b := op.Before
		b.Path = op.Path
		before = append(before, b)
		if op.Before.Kind == manifest.KindNone {
			continue
		}
		cur, err := measure(r.root, op.Path)
		if err != nil {
			return err
		}
		now = append(now, cur)
	}
	var err error
	if r.res.BeforeDigest, err = manifest.TreeDigest(before, func(e *manifest.Entry) (string, error) { return e.Digest, nil }); err != nil {
		return err
	}
	if r.res.Digest, err = manifest.TreeDigest(now, func(e *manifest.Entry) (string, error) { return hashBase(r.root, e.Path) }); err != nil {
		return err
	}
	if r.res.Digest != r.res.BeforeDigest {
		return fmt.Errorf("restore of %s: digest %s after restore differs from the journal's %s", r.root.Path(), r.res.Digest, r.res.BeforeDigest)
	}
	return nil
}

// isOriginal reports whether cur is the very file or symlink before
// measured (same device and inode): the entry the apply moved aside or left
// in place, whatever was written to it since.
func isOriginal(cur, before manifest.Entry) bool {
	if before.Kind != manifest.KindFile && before.Kind != manifest.KindSymlink {
		return false
	}
	return cur.Kind == before.Kind && cur.Ino == before.Ino && cur.Dev == before.Dev && before.Ino != 0
}

// undoInPlace undoes the one change an apply makes to a file in place: a
// mode set on it (a change of mode alone). A mode that is neither the one
// before nor the one the apply set was set by someone else, and stays.
func undoInPlace(root *safefs.Root, op *Op, cur manifest.Entry) error {
	if cur.Kind != manifest.KindFile || cur.Mode == op.Before.Mode || cur.Mode != op.After.Mode || op.After.Kind != manifest.KindFile {
		return nil
	}
	if err := root.Chmod(op.Path, op.Before.Mode); err != nil {
		return err
	}
	return syncFile(root, op.Path)
}

// recreate writes op's before entry at the temporary name tmp: a symlink,
// or a file from its backup (whose bytes writeTemp checks against the
// journal's digest before anything is renamed into the base).
func recreate(root *safefs.Root, j *Journal, op *Op, tmp, dir string) error {
	if op.Before.Kind == manifest.KindSymlink {
		return root.Symlink(op.Before.Target, tmp)
	}
	if op.Backup == "" || strings.ContainsAny(op.Backup, "/\\") || op.Backup == "." || op.Backup == ".." {
		return fmt.Errorf("journal %s names no usable backup for %s; it is not acted on", dir, op.Path)
	}
	src, err := openBackup(filepath.Join(dir, backupDir, op.Backup))
	if err != nil {
		return fmt.Errorf("restore %s: backup: %w", op.Path, err)
	}
	defer src.Close()
	return writeTemp(root, tmp, op.Path, src, op.Before, true)
}

// settleOut decides on an entry that came out of op i's path, now at name:
// what the apply wrote, or what the journal backed up, goes; anything else
// was written by someone else and is saved in the journal's displaced
// directory first.
func settleOut(root *safefs.Root, j *Journal, i int, name, dir string, res *RestoreResult) error {
	op := &j.Ops[i]
	cur, err := measure(root, name)
	if err != nil {
		return err
	}
	if cur.Kind == manifest.KindNone {
		return nil
	}
	if cur.Kind == manifest.KindDir {
		return fmt.Errorf("restore %s: %s is a directory airlock did not make; move it away and run recover again", filepath.Join(root.Path(), op.Path), filepath.Join(root.Path(), name))
	}
	if matches(root, name, op.After) != nil && matches(root, name, op.Before) != nil {
		if err := save(root, op.Path, name, cur, dir, res); err != nil {
			return err
		}
	}
	return root.Remove(name)
}

func quoted(paths []string) []string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = fmt.Sprintf("%q", p)
	}
	return q
}

// mustRemove: an entry of kind cur must go before an entry of kind before
// can be put back. Files and symlinks are replaced by rename instead.
func mustRemove(before, cur manifest.Kind) bool {
	if before == manifest.KindNone {
		return true
	}
	return before != cur && (before == manifest.KindDir || cur == manifest.KindDir)
}

func hashBase(root *safefs.Root, rel string) (string, error) {
	f, err := root.Open(rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashOf(f)
}

// save copies the file or symlink at name (found at, or coming out of,
// the journaled path rel) into the journal's displaced directory and
// reports it, so that restoring rel loses nothing someone else wrote.
func save(root *safefs.Root, rel, name string, cur manifest.Entry, dir string, res *RestoreResult) error {
	if cur.Kind != manifest.KindFile && cur.Kind != manifest.KindSymlink {
		return nil
	}
	ddir := filepath.Join(dir, "displaced")
	if err := os.MkdirAll(ddir, 0o700); err != nil {
		return err
	}
	// A restore that failed earlier (an in-process rollback, or a recover
	// that was killed) may have saved files here already: take the next
	// free name, never one of theirs.
	var dst string
	var out *os.File
	for i := len(res.Displaced); ; i++ {
		dst = filepath.Join(ddir, fmt.Sprintf("%06d", i))
		var err error
		if cur.Kind == manifest.KindSymlink {
			err = os.Symlink(cur.Target, dst)
		} else {
			out, err = os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("save %s before restoring it: %w", rel, err)
		}
		break
	}
	if cur.Kind != manifest.KindSymlink {
		src, err := root.Open(name)
		if err != nil {
			out.Close()
			return err
		}
		defer src.Close()
		_, err = filecopy.Copy(context.Background(), out, src, filecopy.Options{})
		if err == nil {
			// The mode is part of what they wrote (a chmod +x).
			err = out.Chmod(cur.Mode & fs.ModePerm)
		}
		if err == nil {
			err = out.Sync()
		}
		out.Close()
		if err != nil {
			return fmt.Errorf("save %s before restoring it: %w", rel, err)
		}
	}
	res.Displaced = append(res.Displaced, rel+" -> "+dst)
	return safefs.SyncDir(ddir)
}

// checkBackups verifies every backup the journal names against the digest
// it recorded, before the base is touched: a restore that met a bad backup
// half-way would leave the base a mix of restored and applied paths.
func checkBackups(j *Journal, dir string) error {
	for _, op := range j.Ops {
		if op.Before.Kind != manifest.KindFile {
			continue
		}
		if op.Backup == "" || strings.ContainsAny(op.Backup, "/\\") || op.Backup == "." || op.Backup == ".." {
			return fmt.Errorf("journal %s names no usable backup for %s; it is not acted on", dir, op.Path)
		}
		p := filepath.Join(dir, backupDir, op.Backup)
		f, err := openBackup(p)
		if err != nil {
			return fmt.Errorf("backup %s of %s cannot be read (%w): the journal is not acted on and the base is left as the interrupted apply left it", p, op.Path, err)
		}
		d, err := hashOf(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("read backup %s of %s: %w", p, op.Path, err)
		}
		if d != op.Before.Digest {
			return fmt.Errorf("backup %s of %s does not match the journal's digest (%s, want %s): it was altered, so the journal is not acted on and the base is left as the interrupted apply left it", p, op.Path, d, op.Before.Digest)
		}
	}
	return nil
}

// sweepTemps deals with every entry a killed or failed apply or restore
// of the transaction left in the base under its temporary prefix, in every
// directory the journal touches. An operation's entry that is the very
// entry its path held before the apply is returned (by operation index)
// for the restore to put back when the operation is restored, and put back
// at once where its path is empty otherwise; what the apply wrote is
// removed; anything else was written by someone else and is saved first.
func sweepTemps(root *safefs.Root, j *Journal, dir string, res *RestoreResult, in func(int) bool, isOrig func(int, manifest.Entry) bool) (map[int]string, error) {
	dirs := map[string]bool{}
	for _, op := range j.Ops {
		dirs[parent(op.Path)] = true
	}
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		list = append(list, d)
	}
	sort.Strings(list)
	prefix := TempPrefix(j.TxID)
	orig := map[int]string{}
	for _, d := range list {
		// A parent that is not a directory (any more, or yet) holds no
		// leftovers: the apply retyped it.
		f, err := root.Open(d)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, safefs.ErrSymlink) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", filepath.Join(root.Path(), d), err)
		}
		sort.Strings(names)
		for _, n := range names {
			if !strings.HasPrefix(n, prefix) {
				continue
			}
			rel := path.Join(d, n)
			i, ok := opIndex(strings.TrimPrefix(n, prefix), len(j.Ops))
			if !ok || parent(j.Ops[i].Path) != d {
				// Not an operation's name: a leftover of an older
				// airlock's random temporary names, its own.
				if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, err
				}
				continue
			}
			op := &j.Ops[i]
			cur, err := measure(root, rel)
			if err != nil {
				return nil, err
			}
			original := isOrig(i, cur) || ((op.Before.Kind == manifest.KindFile || op.Before.Kind == manifest.KindSymlink) && matches(root, rel, op.Before) == nil)
			if original && orig[i] == "" {
				if in(i) {
					orig[i] = rel
					continue
				}
				// Not being restored, yet moved aside: back in place if
				// nothing else took its path.
				err := root.RenameNoReplace(rel, op.Path)
				if err == nil {
					continue
				}
				if !errors.Is(err, fs.ErrExist) && !errors.Is(err, errors.ErrUnsupported) {
					return nil, err
				}
			}
			if err := settleOut(root, j, i, rel, dir, res); err != nil {
				return nil, err
			}
		}
	}
	return orig, nil
}

// opIndex parses the part of a temporary name after the prefix: "op<i>",
// or "op<i>-old" where an entry was moved aside without an exchange.
func opIndex(rest string, n int) (int, bool) {
	rest, ok := strings.CutPrefix(rest, "op")
	if !ok {
		return 0, false
	}
	rest = strings.TrimSuffix(rest, asideSuffix)
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || i >= n || strconv.Itoa(i) != rest {
		return 0, false
	}
	return i, true
}

// openBackup opens a backup without following a symlink and refuses
// anything but a regular file: a backup swapped for a link or a FIFO after
// the caller's checks of the journal must not be read in its place.
func openBackup(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("backup %s is a symlink, not a regular file", p)
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("backup %s is not a regular file", p)
		}
		return nil, err
	}
	return f, nil
}
