package airlock

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/safefs"
)

// Rewound is what Tx.Rewind did.
type Rewound struct {
	// To is the checkpoint the staged workspace now holds.
	To Checkpoint
	// Saved is the checkpoint Rewind took first, of the state it
	// replaced: rewinding to it undoes the rewind.
	Saved Checkpoint
	// Paths counts the paths the rewind wrote or removed.
	Paths int
}

// UnknownCheckpointError is the error Rewind returns for a number the
// transaction has no checkpoint under.
type UnknownCheckpointError struct {
	Tx     string
	Number int
	Have   []int
}

func (e *UnknownCheckpointError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("transaction %s has no checkpoint %d: it has none yet", e.Tx, e.Number)
	}
	return fmt.Sprintf("transaction %s has no checkpoint %d: it has %d to %d", e.Tx, e.Number, e.Have[0], e.Have[len(e.Have)-1])
}

// Rewind puts the staged workspace back exactly as it was at checkpoint
// n: every path the transaction changed since is made what n recorded
// (content, mode, symlink target, or absent), and every path n had
// changed that was put back since is changed again. The base is never
// touched. It first takes a checkpoint of the workspace as it is
// (CheckpointByRewind), so that rewinding to that one undoes the rewind.
//
// It holds the transaction's lock and refuses (*CommandRunningError)
// while a command of the transaction runs. A process airlock did not
// start can still write meanwhile: the checkpoint taken first refuses a
// file that changes while it is read, and once written the workspace is
// measured again and compared, by bytes, with checkpoint n; a difference
// is an error naming the paths (rewind again once the writer stopped).
func (t *Tx) Rewind(ctx context.Context, n int) (_ *Rewound, err error) {
	defer exported(&err)
	unlock, err := t.workLock(ctx, "rewind")
	if err != nil {
		return nil, err
	}
	defer unlock()
	ns, err := t.checkpointNumbers()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(ns, n) {
		return nil, &UnknownCheckpointError{Tx: t.ID(), Number: n, Have: ns}
	}
	target, err := t.loadCheckpoint(n)
	if err != nil {
		return nil, err
	}
	stamp, err := t.baseRecordStamp()
	if err != nil {
		return nil, err
	}
	if !manifest.SameStat(stamp, target.BaseRecord) {
		return nil, fmt.Errorf("rewind %s to checkpoint %d: it was taken before the transaction was rebased, recovered or partly committed (commit ID -- PATH...), each of which moves the base its changes are measured against, and records its changes against the older one; rewind to a checkpoint taken since", t.ID(), n)
	}
	orig, err := t.originals()
	if err != nil {
		return nil, err
	}
	if err := t.verifyCheckpoint(orig, target); err != nil {
		return nil, fmt.Errorf("rewind %s to checkpoint %d: nothing was changed: %w", t.ID(), n, err)
	}
	saved, err := t.checkpoint(ctx, CheckpointOptions{Message: "before rewind to " + strconv.Itoa(n), Auto: CheckpointByRewind})
	if err != nil {
		return nil, err
	}
	steps := rewindSteps(target.Set, saved.Set)
	root, err := safefs.OpenRootNoFollow(t.Path())
	if err != nil {
		return nil, fmt.Errorf("rewind %s: open the staged workspace %s: %w", t.ID(), t.Path(), err)
	}
	defer root.Close()
	// Every byte the rewind writes must be at hand, and proved to be the
	// bytes recorded, before it writes any: a checkpoint's in the content
	// store, the base's at open where it still is. Proving them only as
	// they are copied would find a bad one after the staged file it
	// replaces, possibly its only good copy, is gone.
	for _, s := range steps {
		if s.want.Kind != manifest.KindFile {
			continue
		}
		if err := t.proveSource(orig, s); err != nil {
			return nil, fmt.Errorf("rewind %s to checkpoint %d: nothing was changed: %w", t.ID(), n, err)
		}
	}
	// A test writes the staged tree here, after the state the rewind
	// works from was recorded, and again once it has written.
	fault.Point("rewind-checkpointed")
	w := &rewinder{t: t, root: root, orig: orig, saved: map[string]fs.FileMode{}}
	if err := w.apply(steps); err != nil {
		return nil, fmt.Errorf("rewind %s to checkpoint %d: %w; checkpoint %d holds the workspace as it was before (airlock rewind %s %d)", t.ID(), n, err, saved.Number, t.ID(), saved.Number)
	}
	fault.Point("rewind-written")
	if err := t.checkRewound(ctx, root, target.Set); err != nil {
		return nil, fmt.Errorf("rewind %s to checkpoint %d: %w; checkpoint %d holds the workspace as it was before the rewind", t.ID(), n, err, saved.Number)
	}
	if err := t.event(eventRewound, map[string]any{"to": n, "saved": saved.Number}); err != nil {
		return nil, err
	}
	return &Rewound{To: target.public(), Saved: saved.public(), Paths: len(steps)}, nil
}

// rewindStep makes one path what the target checkpoint recorded.
type rewindStep struct {
	path string
	want manifest.Entry // Kind none: absent
	// atOpen says want is the path as the transaction opened with it
	// (the target had not changed it): a file's bytes are the base's at
	// open, not a checkpoint's.
	atOpen bool
	have   manifest.Entry // what the checkpoint taken first measured
}

// rewindSteps lists, in path order, the paths where the workspace as now
// recorded differs from the target: those either change set names,
// unless both record the same result.
func rewindSteps(target, now *changeset.Set) []rewindStep {
	tm := make(map[string]changeset.Change, len(target.Changes))
	for _, c := range target.Changes {
		tm[c.Path] = c
	}
	nm := make(map[string]changeset.Change, len(now.Changes))
	var paths []string
	for _, c := range now.Changes {
		nm[c.Path] = c
		paths = append(paths, c.Path)
	}
	for _, c := range target.Changes {
		if _, ok := nm[c.Path]; !ok {
			paths = append(paths, c.Path)
		}
	}
	slices.Sort(paths)
	var steps []rewindStep
	for _, p := range paths {
		ct, inT := tm[p]
		cn, inN := nm[p]
		s := rewindStep{path: p}
		if inT {
			s.want = ct.Result
		} else {
			s.want, s.atOpen = cn.Base, true
		}
		if inN {
			s.have = cn.Result
		} else {
			s.have = ct.Base
		}
		if inT && inN && sameResult(s.want, s.have) {
			continue
		}
		s.want.Path, s.have.Path = p, p
		steps = append(steps, s)
	}
	// FIFOs, sockets and devices made since the target are removed; one
	// it had and that went since is not made again (airlock never makes
	// them).
	for _, u := range now.Unsupported {
		if !slices.Contains(target.Unsupported, u) {
			steps = append(steps, rewindStep{path: string(u), want: manifest.Entry{Path: string(u)}, have: manifest.Entry{Path: string(u), Kind: manifest.KindOther}})
		}
	}
	return steps
}

// sameResult reports whether two recorded results are the same content:
// kind, mode, and bytes or symlink target.
func sameResult(a, b manifest.Entry) bool {
	if a.Kind != b.Kind || (a.Kind != manifest.KindSymlink && a.Mode != b.Mode) {
		return false
	}
	switch a.Kind {
	case manifest.KindFile:
		return a.Digest != "" && a.Digest == b.Digest
	case manifest.KindSymlink:
		return a.Target == b.Target
	}
	return true
}

// rewindSource opens the bytes a step writes.
func (t *Tx) rewindSource(orig *originals.Store, s rewindStep) (io.ReadCloser, error) {
	if s.atOpen {
		return t.openAtOpen(orig, s.want)
	}
	if !orig.Has(s.want.Digest) {
		return nil, fmt.Errorf("%s: the content the checkpoint recorded (%s) is no longer in the content store %s", s.path, s.want.Digest, orig.Dir())
	}
	return orig.Open(s.want.Digest)
}

// proveSource reads the bytes a step writes whole and checks them
// against the digest recorded, where one was.
func (t *Tx) proveSource(orig *originals.Store, s rewindStep) error {
	rc, err := t.rewindSource(orig, s)
	if err != nil {
		return err
	}
	defer rc.Close()
	d, err := manifest.HashReader(rc)
	if err != nil {
		return fmt.Errorf("%s: read the content to restore: %w", s.path, err)
	}
	if s.want.Digest != "" && d != s.want.Digest && !s.atOpen {
		return fmt.Errorf("%s: %w", s.path, &originals.BadObjectError{Path: orig.ObjectPath(s.want.Digest), Digest: s.want.Digest, Got: d})
	}
	if s.want.Digest != "" && d != s.want.Digest {
		return fmt.Errorf("%s: its content at open read now (%s) is not the content recorded (%s)", s.path, d, s.want.Digest)
	}
	return nil
}

// rewinder writes the steps of one rewind beneath the staged workspace's
// root, following no symlink on the way.
type rewinder struct {
	t    *Tx
	root *safefs.Root
	orig *originals.Store
	// saved holds the modes of directories it made writable to write in
	// them, to be set back unless the target sets them itself.
	saved map[string]fs.FileMode
	order []string
}

func (w *rewinder) apply(steps []rewindStep) error {
	// Children before parents: what must go goes, so that a path that
	// changes kind is free to be made again.
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		if s.have.Kind == manifest.KindNone {
			continue
		}
		if s.want.Kind == s.have.Kind && s.want.Kind != manifest.KindOther {
			continue // a file or symlink is replaced by a rename; a directory keeps its entries
		}
		if err := w.removeTree(s.path); err != nil {
			return err
		}
	}
	// Parents before children.
	wantDirs := map[string]fs.FileMode{}
	for _, s := range steps {
		var err error
		switch s.want.Kind {
		case manifest.KindDir:
			wantDirs[s.path] = s.want.Mode
			if s.have.Kind != manifest.KindDir {
				if err = w.writable(path.Dir(s.path)); err == nil {
					err = w.root.Mkdir(s.path, 0o700)
				}
			}
		case manifest.KindFile:
			err = w.file(s)
		case manifest.KindSymlink:
			err = w.symlink(s)
		}
		if err != nil {
			return err
		}
	}
	// A directory's own mode last, children first: a read-only one is
	// made so once its entries are in.
	for i := len(steps) - 1; i >= 0; i-- {
		if m, ok := wantDirs[steps[i].path]; ok {
			if err := w.root.Chmod(steps[i].path, m); err != nil {
				return err
			}
		}
	}
	for i := len(w.order) - 1; i >= 0; i-- {
		d := w.order[i]
		if _, ok := wantDirs[d]; ok {
			continue
		}
		if err := w.root.Chmod(d, w.saved[d]); err != nil {
			return err
		}
	}
	return nil
}

// writable makes the directory rel ("." = the root) writable by its owner
// for the rewind, noting its mode to set back.
func (w *rewinder) writable(rel string) error {
	if rel == "." {
		rel = ""
	}
	if _, ok := w.saved[rel]; ok {
		return nil
	}
	fi, err := w.root.Lstat(rel)
	if err != nil {
		return err
	}
	if fi.Mode&0o700 == 0o700 {
		return nil
	}
	if err := w.root.Chmod(rel, fi.Mode|0o700); err != nil {
		return err
	}
	w.saved[rel] = fi.Mode & manifest.ModeMask
	w.order = append(w.order, rel)
	return nil
}

// removeTree removes rel and, if it is a directory, all beneath it. A
// path already gone is no error.
func (w *rewinder) removeTree(rel string) error {
	fi, err := w.root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := w.writable(path.Dir(rel)); err != nil {
		return err
	}
	if !fi.Mode.IsDir() {
		return w.root.Remove(rel)
	}
	if err := w.root.Chmod(rel, 0o700); err != nil {
		return err
	}
	d, err := w.root.Open(rel)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := w.removeTree(rel + "/" + name); err != nil {
			return err
		}
	}
	delete(w.saved, rel)
	w.order = slices.DeleteFunc(w.order, func(d string) bool { return d == rel || strings.HasPrefix(d, rel+"/") })
	return w.root.RemoveDir(rel)
}

// tempName is a name for a new entry beside rel, which nothing else in
// the workspace is expected to use.
func tempName(rel string) string {
	return path.Join(path.Dir(rel), ".airlock-rewind-"+strconv.FormatUint(rand.Uint64(), 36))
}

// file writes s's bytes beside its path and renames them over it, proving
// a checkpoint's bytes by their digest as it copies them.
func (w *rewinder) file(s rewindStep) error {
	dir := path.Dir(s.path)
	if err := w.writable(dir); err != nil {
		return err
	}
	if dir == "." {
		dir = ""
	}
	src, err := w.t.rewindSource(w.orig, s)
	if err != nil {
		return err
	}
	defer src.Close()
	f, tmp, err := w.root.CreateTemp(dir, ".airlock-rewind-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			w.root.Remove(tmp)
		}
	}()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), src); err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if d := manifest.Sum(h); s.want.Digest != "" && d != s.want.Digest {
		return fmt.Errorf("%s: the content read (%s) is not the content recorded (%s)", s.path, d, s.want.Digest)
	}
	if err := f.Chmod(s.want.Mode); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := w.root.Rename(tmp, s.path); err != nil {
		return err
	}
	ok = true
	return nil
}

func (w *rewinder) symlink(s rewindStep) error {
	if err := w.writable(path.Dir(s.path)); err != nil {
		return err
	}
	tmp := tempName(s.path)
	if err := w.root.Symlink(s.want.Target, tmp); err != nil {
		return err
	}
	if err := w.root.Rename(tmp, s.path); err != nil {
		w.root.Remove(tmp)
		return err
	}
	return nil
}

// checkRewound measures the workspace again and compares its change set
// with the target's, each file by its bytes: what it finds is what a diff
// shows now, and anything else was written meanwhile.
func (t *Tx) checkRewound(ctx context.Context, root *safefs.Root, target *changeset.Set) error {
	now, err := t.diff(ctx)
	if err != nil {
		return err
	}
	tm := make(map[string]changeset.Change, len(target.Changes))
	for _, c := range target.Changes {
		tm[c.Path] = c
	}
	var off []string
	for _, c := range now.Changes {
		want, ok := tm[c.Path]
		delete(tm, c.Path)
		if !ok || want.Op != c.Op || want.Result.Kind != c.Result.Kind || (c.Result.Kind != manifest.KindSymlink && want.Result.Mode != c.Result.Mode) || want.Result.Target != c.Result.Target {
			off = append(off, c.Path)
			continue
		}
		if c.Result.Kind != manifest.KindFile {
			continue
		}
		e := c.Result
		e.Path = c.Path
		f, err := changeset.OpenStaged(root, e)
		if err != nil {
			off = append(off, c.Path)
			continue
		}
		d, err := manifest.HashReader(f)
		f.Close()
		if err != nil || d != want.Result.Digest {
			off = append(off, c.Path)
		}
	}
	for p := range tm {
		off = append(off, p)
	}
	if len(off) == 0 {
		return nil
	}
	slices.Sort(off)
	more := ""
	if len(off) > 5 {
		more = fmt.Sprintf(" and %d more", len(off)-5)
		off = off[:5]
	}
	return fmt.Errorf("the staged workspace changed while it was rewound (%s%s differ from the checkpoint): a process is still writing in it; stop it and rewind again", strings.Join(off, ", "), more)
}
