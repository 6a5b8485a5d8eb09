package airlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// Outcome is how a transaction settled.
type Outcome string

const (
	Committed Outcome = "committed"
	Discarded Outcome = "discarded"
	Refused   Outcome = "refused"
	NoChanges Outcome = "no_changes"
)

// Result is what a settle did.
type Result struct {
	TxID        string
	Outcome     Outcome
	Refusal     *Refusal // set when Outcome is Refused
	Added       int
	Modified    int
	Deleted     int
	GitMeta     int      // changed paths under .git, not applied
	Kept        []string // deleted directories kept because they hold paths the transaction never saw
	Receipt     *Receipt
	ReceiptPath string
	// Repeat is true when the transaction had already settled and this
	// call only reports the first outcome.
	Repeat bool
	// Warnings are things that went wrong after the outcome was decided
	// and recorded (a --receipt copy that could not be written); they
	// never change the outcome.
	Warnings []string
	// Validators are the validate commands that ran on the candidate, in
	// order: the project's, then the caller's. After a ValidationFailed
	// refusal the last is the one that failed.
	Validators []string
}

// SettleOptions describe the settle of a transaction.
type SettleOptions struct {
	Approve   bool      // approve changes to protected paths
	ExitCode  *int      // the command's exit code, for the receipt
	StartedAt time.Time // when the command started; zero means the open time
	// ReceiptCopy, if set, is a second file the receipt is written to.
	ReceiptCopy string
	// Validate, if set, is a validator the caller adds. The project's
	// validate command (from the base's .airlock.toml, recorded at open)
	// always runs first and cannot be replaced or dropped from here; then
	// Validate runs, with `sh -c`, in the same candidate tree (the base now
	// plus the prepared change set), before anything is applied. A non-zero
	// exit of either refuses the commit with ValidationFailed.
	Validate string
	// ExpectDiffDigest, if set, binds the commit to a change set the
	// caller reviewed: the frozen change set's digest (the receipt's
	// diff_digest) must equal it, else the commit is refused with
	// ReviewStale and nothing is applied.
	ExpectDiffDigest string

	// validated are the validators the commit ran, for its result and
	// receipt; set by the commit itself on its own copy of the options.
	validated []string
}

// Commit applies the change set to the base through every fail-closed check,
// all or nothing. A refusal returns a *Refusal error together with a Result
// whose receipt records it; the base is then exactly as before and the
// transaction is kept.
//
// The steps, in order: compute and freeze the change set; take the base's
// lock; check drift (three-way merging what drifted, where it can);
// protected paths, boundaries and shared inodes; validate the candidate;
// journal and back up; apply; fsync; verify; record the receipt; retire the
// journal.
func (t *Tx) Commit(ctx context.Context, o SettleOptions) (*Result, error) {
	res, err := t.commit(ctx, o)
	t.copyReceipt(res, o)
	return res, err
}

func (t *Tx) commit(ctx context.Context, o SettleOptions) (*Result, error) {
	// One settle of a transaction at a time: a second commit of the same
	// transaction waits, then reports the first outcome.
	unlockTx, err := t.st.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockTx()
	if res, done, err := t.settledAlready(); done || err != nil {
		return res, err
	}
	status, err := t.Status()
	if err != nil {
		return nil, err
	}
	if status == StatusInterrupted {
		return nil, interrupted(t.Base(), t.ID())
	}
	set, err := t.diff(ctx)
	if err != nil {
		return nil, err
	}
	if set.Empty() {
		return t.settle(ctx, NoChanges, nil, set, o)
	}
	if err := t.freeze(ctx, set); err != nil {
		if r, ok := stagedChanged(err); ok {
			return t.settle(ctx, Refused, r, set, o)
		}
		return nil, err
	}
	if r := checkReviewed(set, o); r != nil {
		return t.settle(ctx, Refused, r, set, o)
	}
	if len(set.Unsupported) > 0 {
		var p []string
		for _, u := range set.Unsupported {
			p = append(p, string(u))
		}
		return t.settle(ctx, Refused, refuse(UnsupportedEntry, p, "the staged workspace holds FIFOs, sockets or device nodes, which airlock never applies; remove them"), set, o)
	}

	base, err := t.store.st.Base(t.Base())
	if err != nil {
		return nil, err
	}
	unlock, err := base.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if id, ok, err := base.Inflight(); err != nil {
		return nil, err
	} else if ok {
		return t.settle(ctx, Refused, interrupted(t.Base(), id), set, o)
	}
	root, r, err := t.openBase(t.Base())
	if err != nil {
		return nil, err
	}
	if r != nil {
		return t.settle(ctx, Refused, r, set, o)
	}
	defer root.Close()
	// The gate is the project's as the base holds it now, not as the
	// transaction's state says it was (see projectNow).
	gate, err := t.projectNow()
	if err != nil {
		return nil, err
	}
	ops, drifted, escapes, err := checkDrift(root, set)
	if err != nil {
		return nil, err
	}
	prepared := set
	if len(drifted) > 0 {
		var merged []journal.Op
		merged, prepared, r, err = t.mergeDrifted(ctx, root, set, drifted)
		if err != nil {
			return nil, err
		}
		ops = append(ops, merged...)
	}
	if r == nil {
		r, err = t.checkProtected(set, o.Approve, gate)
		if err != nil {
			return nil, err
		}
	}
	if r == nil {
		r = checkBoundary(set, escapes)
	}
	if r == nil {
		r = checkSharedInode(root, set, t.Path(), t.st.Path(objectsDir))
	}
	if v := t.validators(o, gate); r == nil && len(v) > 0 {
		r, o.validated, err = t.validate(ctx, ops, v, gate)
		if err != nil {
			return nil, err
		}
	}
	if r != nil {
		return t.settle(ctx, Refused, r, set, o)
	}
	fault.Point("checked")
	return t.apply(ctx, root, base, prepared, ops, o)
}

// apply is the commit from the journal on, with the base locked and every
// check passed.
func (t *Tx) apply(ctx context.Context, root *safefs.Root, base *state.Base, set *changeset.Set, ops []journal.Op, o SettleOptions) (*Result, error) {
	jdir := t.st.Path(journalDir)
	// A journal left here by a process that died before marking the base
	// in flight never touched the base: drop it, unless it is not one
	// airlock could have written.
	if err := t.checkJournal(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(jdir); err != nil {
		return nil, fmt.Errorf("remove stale journal %s: %w", jdir, err)
	}
	j, err := journal.Prepare(ctx, root, jdir, t.ID(), ops)
	if err != nil {
		var d *journal.DriftError
		if errors.As(err, &d) {
			os.RemoveAll(jdir)
			return t.settle(ctx, Refused, refuse(BaseDrift, []string{d.Path}, "changed in the base while the commit was being prepared"), set, o)
		}
		var e *journal.EscapeError
		if errors.As(err, &e) {
			os.RemoveAll(jdir)
			return t.settle(ctx, Refused, refuse(BoundaryEscape, []string{e.Path}, "a directory on the way was replaced by a symlink while the commit was being prepared"), set, o)
		}
		return nil, err
	}
	baseDigest, resultDigest, err := opsDigests(j.Ops)
	if err != nil {
		return nil, err
	}
	if err := base.SetInflight(t.ID()); err != nil {
		return nil, err
	}
	if err := t.event(eventApplying, map[string]any{"ops": len(j.Ops), "base_digest": baseDigest}); err != nil {
		return nil, err
	}
	fault.Point("journal-synced")
	applied, err := journal.Apply(ctx, root, j, t.st.Path(objectsDir))
	if err != nil {
		// Put back what the apply changed before anything else, from the
		// journal and its backups alone, exactly as recover would. A path
		// the apply had not reached is left alone: if someone changed it
		// meanwhile, that change is theirs.
		displaced, rerr := t.rollBack(ctx, root, base, j, jdir, applied.Done, false, err)
		if rerr != nil {
			return nil, rerr
		}
		kept := ""
		if len(displaced) > 0 {
			kept = "; content another process wrote meanwhile to a path the commit had applied was saved: " + strings.Join(displaced, "; ")
		}
		var d *journal.DriftError
		if errors.As(err, &d) {
			return t.settle(ctx, Refused, refuse(BaseDrift, []string{d.Path}, "changed in the base while the commit was applying; what the commit had applied was rolled back exactly%s", kept), set, o)
		}
		var busy *journal.BusyError
		if errors.As(err, &busy) {
			return t.settle(ctx, Refused, refuse(BaseDrift, []string{busy.Path}, "%v; the commit was rolled back exactly and the file is back in place; let the process finish or close the file, then commit again%s", busy, kept), set, o)
		}
		return t.settle(ctx, Refused, refuse(ApplyFailed, nil, "%v; the base was rolled back exactly%s", err, kept), set, o)
	}
	fault.Point("applied")
	if len(applied.Kept) > 0 {
		// Kept directories are still there: the digest says so.
		if resultDigest, err = keptDigest(root, j.Ops, applied.Kept); err != nil {
			return nil, err
		}
	}
	res, err := t.record(Committed, nil, set, o, baseDigest, resultDigest, base)
	if err != nil {
		// Not recorded as committed: the commit must not stand.
		if status, serr := t.Status(); serr == nil && status != StatusCommitted {
			if _, rerr := t.rollBack(ctx, root, base, j, jdir, nil, true, err); rerr != nil {
				return nil, rerr
			}
			return nil, fmt.Errorf("record the commit of %s: %w; the base was rolled back exactly and the transaction is kept", t.ID(), err)
		}
		return nil, fmt.Errorf("record the commit of %s: %w; run `airlock recover --workdir %s`", t.ID(), err, t.Base())
	}
	fault.Point("recorded")
	res.Kept = applied.Kept
	if err := t.keepApplied(j, jdir); err != nil {
		return nil, err
	}
	if err := base.ClearInflight(); err != nil {
		return nil, err
	}
	if err := journal.Retire(jdir); err != nil {
		return nil, err
	}
	t.settleStaged(ctx)
	return res, nil
}

// rollBack undoes an apply in this process: it restores the paths done
// (all of the journal's, with all) from the backups, keeps whatever
// another process wrote meanwhile to a path it restores, rebases the open
// manifest, records the recovery and only then clears the in-flight marker
// and retires the journal. An error leaves the journal in place for
// `airlock recover` and says so.
func (t *Tx) rollBack(ctx context.Context, root *safefs.Root, base *state.Base, j *journal.Journal, jdir string, done []string, all bool, cause error) ([]string, error) {
	ctx = context.WithoutCancel(ctx)
	var restored *journal.RestoreResult
	var err error
	ops := j.Ops
	keep := func(err error) error {
		return fmt.Errorf("apply to %s failed (%v) and the rollback failed too (%v); the journal is kept: run `airlock recover --workdir %s`", t.Base(), cause, err, t.Base())
	}
	// The backups are read back into the base: the journal must still be
	// the one this process wrote.
	if err := t.checkJournal(); err != nil {
		return nil, keep(err)
	}
	if all {
		restored, err = journal.Restore(ctx, root, j, jdir)
	} else {
		restored, err = journal.RestoreDone(ctx, root, j, jdir, done)
		ops = doneOps(j.Ops, done)
	}
	if err != nil {
		return nil, keep(err)
	}
	if err := t.rebaseOpen(root, ops); err != nil {
		return nil, keep(err)
	}
	displaced, err := t.keepDisplaced(jdir, restored)
	if err != nil {
		return nil, keep(err)
	}
	if err := t.event(eventRecovered, map[string]any{"digest": restored.Digest, "cause": cause.Error(), "displaced": displaced}); err != nil {
		return nil, keep(err)
	}
	if err := base.ClearInflight(); err != nil {
		return nil, keep(err)
	}
	if err := journal.Retire(jdir); err != nil {
		return nil, err
	}
	return displaced, nil
}

// doneOps are the operations of ops whose paths an apply reports done.
func doneOps(ops []journal.Op, done []string) []journal.Op {
	d := make(map[string]bool, len(done))
	for _, p := range done {
		d[p] = true
	}
	var out []journal.Op
	for _, op := range ops {
		if d[op.Path] {
			out = append(out, op)
		}
	}
	return out
}

// keepApplied keeps the record of a finished apply: the journal itself (the
// exact before and after of every path, which undo reverses) and, in the
// base's originals store, the bytes it replaced (merge bases for the
// transactions still open, and undo's material).
func (t *Tx) keepApplied(j *journal.Journal, jdir string) error {
	// The backups are moved into the originals store, whose content undo
	// and merges trust: the journal must pass the state checks first.
	if err := t.checkJournal(); err != nil {
		return err
	}
	b, err := t.st.ReadFile(journal.Path(journalDir))
	if err != nil {
		return fmt.Errorf("keep the applied journal: %w", err)
	}
	if err := safefs.WriteFile(t.st.Path(appliedFile), b, 0o600); err != nil {
		return err
	}
	orig, err := t.originals()
	if err != nil {
		return err
	}
	for _, op := range j.Ops {
		if op.Before.Kind != manifest.KindFile || op.Backup == "" {
			continue
		}
		e := op.Before
		e.Path = op.Path
		if err := orig.Add(t.ID(), e, journal.BackupPath(jdir, op)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// freeze computes the frozen copy of the change set in the transaction's
// state. A refused transaction committed again is frozen afresh from its
// staged workspace.
func (t *Tx) freeze(ctx context.Context, set *changeset.Set) error {
	dir := t.st.Path(changesDir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear frozen change set %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := changeset.Freeze(ctx, set, t.contentDir(), t.st.Path(objectsDir)); err != nil {
		return err
	}
	return set.Save(t.st.Path(changeSetFile))
}

// checkIdentity refuses when the base path now names another directory
// than the one opened (it was moved away and something else put there).
func (t *Tx) checkIdentity() *Refusal {
	dev, ino, err := identity(t.Base())
	if err != nil || dev != t.rec.BaseDevice || ino != t.rec.BaseInode {
		return refuse(BaseDrift, []string{"."}, "%s is no longer the directory the transaction opened (device and inode differ)", t.Base())
	}
	return nil
}

// drift is a changed path that also changed in the base since open.
type drift struct {
	change changeset.Change
	now    manifest.Entry // the base path as it is now
}

// checkDrift compares every path the change set touches, and each of its
// parent directories, with the base as it was at open. It returns the
// journal operations for the paths that did not move, with Before set to
// what is in the base now; the paths that moved, for merging; and the paths
// that cannot be reached without crossing a symlink or leaving the base,
// for the boundary check.
func checkDrift(root *safefs.Root, set *changeset.Set) ([]journal.Op, []drift, []string, error) {
	var ops []journal.Op
	var drifted []drift
	var escapes []string
	parentOK := map[string]bool{}
	known := map[string]manifest.Entry{}
	kinds := map[string]manifest.Kind{}
	for _, c := range set.Changes {
		known[c.Path] = c.Base
		kinds[c.Path] = c.Base.Kind
	}
	for _, c := range set.Changes {
		if safefs.CheckRel(c.Path) != nil || manifest.IsGitMeta(c.Path) {
			escapes = append(escapes, c.Path)
			continue
		}
		cur, err := measureBase(root, c.Path)
		if errors.Is(err, safefs.ErrSymlink) && c.Base.Kind == manifest.KindNone && journal.Shadowed(c.Path, kinds) {
			// Beneath a symlink the change set replaces by a directory:
			// absent now, created once that symlink is gone.
			cur, err = manifest.Entry{Path: c.Path}, nil
		}
		if errors.Is(err, safefs.ErrSymlink) || errors.Is(err, safefs.ErrEscape) {
			escapes = append(escapes, c.Path)
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if !parentsUnchanged(root, c.Path, known, parentOK) {
			drifted = append(drifted, drift{change: c, now: manifest.Entry{Path: c.Path, Kind: manifest.KindOther}})
			continue
		}
		if !unchanged(cur, c.Base) {
			drifted = append(drifted, drift{change: c, now: cur})
			continue
		}
		ops = append(ops, journal.Op{Path: c.Path, Before: cur, After: c.Result})
	}
	return ops, drifted, escapes, nil
}

// unchanged compares a base path now with the base at open. A directory is
// the same while it is a directory with the same mode and inode: its times
// move whenever anything inside it changes, which is not drift of the
// directory itself.
func unchanged(cur, open manifest.Entry) bool {
	if cur.Kind != open.Kind {
		return false
	}
	switch cur.Kind {
	case manifest.KindNone:
		return true
	case manifest.KindDir:
		return cur.Mode == open.Mode && cur.Ino == open.Ino && cur.Dev == open.Dev
	}
	return manifest.SameStat(cur, open)
}

// parentsUnchanged checks that each parent directory of rel that existed at
// open is still a directory. Parents the change set adds are checked as
// changes of their own.
func parentsUnchanged(root *safefs.Root, rel string, known map[string]manifest.Entry, ok map[string]bool) bool {
	for p := parentOf(rel); p != ""; p = parentOf(p) {
		if ok[p] {
			return true
		}
		if e, changed := known[p]; changed && e.Kind != manifest.KindDir {
			ok[p] = true // added or retyped by the change set
			continue
		}
		cur, err := measureBase(root, p)
		if err != nil || cur.Kind != manifest.KindDir {
			return false
		}
		ok[p] = true
	}
	return true
}

func parentOf(rel string) string {
	d := filepath.Dir(rel)
	if d == "." {
		return ""
	}
	return filepath.ToSlash(d)
}

func measureBase(root *safefs.Root, rel string) (manifest.Entry, error) {
	info, err := root.Lstat(rel)
	// ENOTDIR: a parent is not a directory (yet), as when the change set
	// turns a file into a directory with children; the path is absent.
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return manifest.Entry{Path: rel}, nil
	}
	if err != nil {
		return manifest.Entry{}, err
	}
	e := manifest.Entry{Path: rel, Kind: manifest.KindOf(info.Mode), Mode: info.Mode & manifest.ModeMask,
		Size: info.Size, MtimeNs: info.MtimeNs, CtimeNs: info.CtimeNs, Ino: info.Ino, Dev: info.Dev}
	if e.Kind != manifest.KindFile {
		e.Size = 0
	}
	if e.Kind == manifest.KindSymlink {
		if e.Target, err = root.Readlink(rel); err != nil {
			return manifest.Entry{}, err
		}
	}
	return e, nil
}

// checkProtected refuses a change under a protected selector unless the
// commit was approved. The selectors are the union of those recorded at
// open and those of the project config that governs the base now (gate):
// neither an edit of the transaction's state nor a change the transaction
// makes to the config can drop one.
func (t *Tx) checkProtected(set *changeset.Set, approve bool, gate *project) (*Refusal, error) {
	if approve {
		return nil, nil
	}
	prot, err := newProjectSelector(t.rec.Protect, string(t.rec.Under))
	if err != nil {
		return nil, fmt.Errorf("protected selectors in %s: %w", t.st.Path(recordFile), err)
	}
	now, err := newProjectSelector(gate.Cfg.Protect, gate.Under)
	if err != nil {
		return nil, fmt.Errorf("protected selectors in %s: %w", gate.Cfg.Path, err)
	}
	var hit []string
	for _, c := range set.Changes {
		isDir := c.Result.Kind == manifest.KindDir || (c.Result.Kind == manifest.KindNone && c.Base.Kind == manifest.KindDir)
		if prot.Match(c.Path, isDir) || now.Match(c.Path, isDir) {
			hit = append(hit, c.Path)
		}
	}
	if len(hit) > 0 {
		return refuse(ProtectedPathNotApproved, hit, "the change set touches protected paths; review them (airlock diff %s) and commit with --approve", t.ID()), nil
	}
	return nil, nil
}

// checkBoundary refuses any changed path that is not a plain relative path
// inside the base, that would be reached through a symlink in the base, or
// that lies beneath a symlink the change set itself creates.
func checkBoundary(set *changeset.Set, escapes []string) *Refusal {
	bad := append([]string(nil), escapes...)
	links := map[string]bool{}
	for _, c := range set.Changes {
		if c.Result.Kind == manifest.KindSymlink {
			links[c.Path] = true
		}
	}
	for _, c := range set.Changes {
		if c.Op == changeset.Delete {
			// Removed before anything is created: a directory the change
			// set replaces by a symlink is emptied while it is still one.
			continue
		}
		for p := parentOf(c.Path); p != "" && len(links) > 0; p = parentOf(p) {
			if links[p] {
				bad = append(bad, c.Path)
				break
			}
		}
	}
	if len(bad) > 0 {
		return refuse(BoundaryEscape, bad, "these paths would leave the base or be reached through a symlink")
	}
	return nil
}

// checkSharedInode refuses when a staged or frozen file is the same inode
// as its base file: a write to one would already have changed the other.
func checkSharedInode(root *safefs.Root, set *changeset.Set, staged, objects string) *Refusal {
	var shared []string
	for _, c := range set.Changes {
		if c.Result.Kind != manifest.KindFile {
			continue
		}
		b, err := root.Lstat(c.Path)
		if err != nil {
			continue
		}
		for _, p := range []string{filepath.Join(staged, filepath.FromSlash(c.Path)), changeset.ObjectPath(objects, c.Result.Digest)} {
			e, err := manifest.Lstat(p)
			if err == nil && e.Ino == b.Ino && e.Dev == b.Dev {
				shared = append(shared, c.Path)
				break
			}
		}
	}
	if len(shared) > 0 {
		return refuse(SharedInode, shared, "a staged file is the very inode of its base file (a hard link); the staging was not isolated")
	}
	return nil
}
