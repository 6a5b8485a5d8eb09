package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/history"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/recovery"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// RecoverResult says what Recover found and did.
type RecoverResult struct {
	Base string
	// TxID is the transaction whose apply was interrupted; empty when there
	// was nothing to recover.
	TxID string
	// RolledForward is true when the apply had finished and been recorded
	// as committed before the process died: only its journal was left, and
	// recover retired it. Otherwise the base was rolled back.
	RolledForward bool
	// Digest proves the rollback: the digest of the journaled paths after
	// restoring, equal to the digest the journal recorded before the apply.
	Digest string
	// Displaced lists content someone wrote to a journaled path after the
	// crash, saved before the path was restored.
	Displaced []string
	Result    *Result
	// Orphaned is true when the marker named a transaction whose state
	// was gone or unreadable: recover checked what could still be known,
	// removed the apply's leftovers and cleared the marker. Notes say
	// what it found and did, one sentence each.
	Orphaned bool
	Notes    []string
	// BaseGone is true when the base no longer exists: the apply could not
	// be rolled back into it, its journal was moved to Journal (its
	// backups are the only copy of what the base held), and the marker
	// was cleared. Notes say each step.
	BaseGone bool
	Journal  string
}

// Recover resolves an apply over the base at dir that was interrupted by a
// crash or kill: it puts the base back exactly as it was before that commit
// began (or, if the commit had already been recorded, finishes retiring its
// journal). The transaction is kept, refused with InterruptedApply, and can
// be committed again.
func (s *Store) Recover(ctx context.Context, dir string) (*RecoverResult, error) {
	return s.RecoverWith(ctx, dir, RecoverOptions{})
}

// RecoverOptions confirm what recover cannot tell by itself. A missing
// directory may be deleted for good, or only not there right now (a volume
// not mounted yet, a parent renamed for a moment); a directory at another
// path with the recorded identity may be the base moved there, or, on a
// file system that keeps no birth times, a new directory that was given a
// deleted one's inode; the same inode under another device number, where
// the file system has no identity of its own (or the transaction was
// opened by an earlier version, which recorded the device alone), may be
// the base's disk back under another number, or another directory.
// Guessing either way wrong leaves a base half-applied for good, or writes
// one project's files into another, so recover acts in those cases only
// when told.
type RecoverOptions struct {
	// BaseGone confirms that the base at the path given no longer exists
	// and never will: its interrupted apply is cleared, its journal kept.
	BaseGone bool
	// Moved confirms that the directory at the path given is the
	// transaction's base, moved there since it opened, or its disk back
	// under another device number.
	Moved bool
}

// RecoverWith is Recover with the confirmations of o.
func (s *Store) RecoverWith(ctx context.Context, dir string, o RecoverOptions) (_ *RecoverResult, err error) {
	defer exported(&err)
	base, err := resolveBase(dir)
	if err != nil {
		// No directory is left at that path: the state recorded for it
		// (deleted, or moved away) is found by the path it had.
		if gone, ok := goneBase(dir); ok {
			if !o.BaseGone {
				return nil, stepErrorf("%w; if an interrupted apply was over it, nothing was done: if it was moved, %s; if it is only not there right now (a volume not mounted), run recover once it is back; if it was deleted for good, %s to clear its interrupted apply (its journal is kept)", err, Step{Kind: StepRecoverMoved}, Step{Kind: StepRecoverBaseGone, Base: gone})
			}
			return s.recoverGone(ctx, gone, err)
		}
		return nil, err
	}
	if o.BaseGone {
		return s.recoverGoneUnder(ctx, base)
	}
	if err := s.checkBase(base); err != nil {
		return nil, err
	}
	b, err := s.st().Base(base)
	var stale *state.StaleBaseError
	if errors.As(err, &stale) {
		// The state under this directory's identity was a deleted
		// directory's, with an apply in flight: cleared as for any base
		// that is gone, never rolled back into this one.
		out, err := s.clearGoneBase(ctx, stale.Base, stale.Old.Path, stale.TxID)
		if out != nil {
			out.Notes = append([]string{fmt.Sprintf("%s is not the directory %s that the state under its identity was written for (their birth times differ: %s was deleted and the file system gave its inode to %s)", base, stale.Old.Path, stale.Old.Path, base)}, out.Notes...)
		}
		return out, err
	}
	if err != nil {
		return nil, err
	}
	now, err := identity(base)
	if err != nil {
		return nil, err
	}
	unlock, err := b.Lock(ctx)
	if err != nil {
		return nil, err
	}
	id, ok, err := b.Inflight()
	if err != nil || !ok {
		unlock()
		if err != nil {
			return &RecoverResult{Base: base}, err
		}
		// Not marked under this directory's identity: an apply whose
		// record names this path or this identity under another key is
		// this command's to resolve too (open refuses until it is).
		others, err := s.st().InflightNaming(ctx, base, now, b, true)
		if err != nil || len(others) == 0 {
			return &RecoverResult{Base: base}, err
		}
		return s.recoverElsewhere(ctx, base, now, others[0], o)
	}
	defer unlock()
	return s.recoverMarked(ctx, b, base, now, id, o)
}

// recoverElsewhere resolves, from the base at base (identity now), an
// apply in flight that another base state directory marks and that names
// this path or this identity (see state.InflightNaming): rolled back as
// this base's when its record is this directory (the state of an earlier
// version that could not be moved), or when the user confirms it is
// (--moved: the recorded identity is a device number that changed, the
// inode being the same); otherwise nothing is done, and the error says
// what the user can do.
func (s *Store) recoverElsewhere(ctx context.Context, base string, now state.Identity, e state.Elsewhere, o RecoverOptions) (*RecoverResult, error) {
	where := e.Base.Path()
	switch e.Recorded.Match(now) {
	case state.Unknown:
		if !o.Moved {
			return nil, stepErrorf("transaction %s was interrupted applying to %s, recorded as %s; %s is %s: the same inode under another device number, and nothing says whether it is the same file system mounted again (its file system has no identity of its own, or the apply's state was written by an earlier airlock version, which recorded the device number alone); nothing was done: if %s is that directory, %s; if the file system that held it is not mounted, mount it and run recover there; if that directory was deleted for good, %s (its journal is kept)", e.TxID, where, e.Recorded, base, now, base, Step{Kind: StepRecoverMoved, Base: base}, Step{Kind: StepRecoverBaseGone, Base: where})
		}
	case state.Other:
		confirm := ""
		if o.Moved {
			confirm = fmt.Sprintf("; %s cannot make %s that directory: their identities differ", Step{Kind: StepMoved}, base)
		}
		return nil, stepErrorf("transaction %s was interrupted applying to %s, another directory than %s is now (it was %s; this is %s): open, run and commit over %s refuse until it is resolved, and nothing was done%s: if the file system that held it is not mounted, mount it and run recover there; if that directory was moved, run recover at its new path with %s; if it was deleted for good, %s to clear it (its journal is kept)", e.TxID, where, base, e.Recorded, now, base, confirm, Step{Kind: StepMoved}, Step{Kind: StepRecoverBaseGone, Base: base})
	}
	unlock, err := e.Base.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	id, ok, err := e.Base.Inflight()
	if err != nil || !ok || id != e.TxID {
		return &RecoverResult{Base: base}, err // resolved meanwhile
	}
	out, err := s.recoverMarked(ctx, e.Base, base, now, id, o)
	if out != nil && err == nil {
		out.Notes = append(out.Notes, fmt.Sprintf("the apply was marked in %s, the base's state as it was kept under another name (%s); its receipt chain and originals stay there", e.Base.Dir(), e.Recorded))
	}
	return out, err
}

// recoverMarked resolves the apply of transaction id that the base state b
// marks in flight over the base at base (identity now), with b's lock
// held.
func (s *Store) recoverMarked(ctx context.Context, b *state.Base, base string, now state.Identity, id string, o RecoverOptions) (*RecoverResult, error) {
	out := &RecoverResult{Base: base}
	out.TxID = id
	t, err := s.Tx(id)
	if err != nil {
		// Its state is gone or cannot be trusted (removed from under its
		// commit, damaged): nothing in it is acted on, and the base must
		// not stay wedged behind a marker nothing else can clear.
		return s.recoverOrphan(ctx, b, out, err)
	}
	if err := t.recoverableAt(b, base, now, o, out); err != nil {
		return nil, err
	}
	// A commit of the transaction, or gc removing it, holds this lock; a
	// commit would also wait for the base's lock, held here: only try it.
	unlockTx, err := t.st.TryLock()
	if errors.Is(err, state.ErrLocked) {
		return nil, stepErrorf("transaction %s, whose apply over %s is marked in flight, is locked by another airlock process right now; nothing was done: %s again once it has finished", id, base, Step{Kind: StepRecover, Base: base})
	}
	if err != nil {
		return nil, err
	}
	defer unlockTx()
	if t.rec.PartOf != "" {
		unlockWhole, err := t.linkWhole(s, id, base)
		if err != nil {
			return nil, err
		}
		defer unlockWhole()
	}
	jdir := t.st.Path(journalDir)
	status, err := t.Status()
	if err != nil {
		return nil, err
	}
	if status == StatusCommitted {
		return t.rollForward(ctx, b, jdir, out)
	}
	return t.recoverRollBack(ctx, b, base, jdir, o, out)
}

// linkWhole makes the part t, whose apply recover resolves, the part of
// its whole transaction again, locked: the paths its journal names are
// the whole's too, and the whole's records of the base and the staged
// tree must end consistent with what recover leaves (rebaseOpen after a
// rollback, advance after a landing), as a whole commit's own are. A
// whole whose state is gone leaves nothing to keep consistent.
func (t *Tx) linkWhole(s *Store, id, base string) (func(), error) {
	w, err := s.Tx(t.rec.PartOf)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return func() {}, nil
		}
		return nil, fmt.Errorf("transaction %s, whose apply over %s is marked in flight, is a part of transaction %s, whose state cannot be read (%w); nothing was done", id, base, t.rec.PartOf, err)
	}
	unlock, err := w.st.TryLock()
	if errors.Is(err, state.ErrLocked) {
		return nil, stepErrorf("transaction %s, whose part %s has its apply over %s marked in flight, is locked by another airlock process right now; nothing was done: %s again once it has finished", w.ID(), id, base, Step{Kind: StepRecover, Base: base})
	}
	if err != nil {
		return nil, err
	}
	t.part = &part{whole: w, id: t.ID()}
	return unlock, nil
}

// recoverableAt refuses to recover t through base, whose identity is now
// and whose state b marks t in flight, unless base is the directory t
// opened: the same identity, or one that cannot be told from it and the
// user confirmed (o.Moved); through another path (a bind mount, the base
// moved), only while the recorded path still leads to it, or confirmed.
func (t *Tx) recoverableAt(b *state.Base, base string, now state.Identity, o RecoverOptions, out *RecoverResult) error {
	id := t.ID()
	switch t.baseIdentity().Match(now) {
	case state.Unknown:
		if !o.Moved {
			return stepErrorf("transaction %s was interrupted applying to %s, which it recorded as %s; %s is %s now: the same inode under another device number, and nothing says whether it is the same file system mounted again (the transaction was opened by an earlier airlock version, which recorded the device number alone, or its file system has no identity of its own); nothing was done: if %s is that directory, %s", id, t.Base(), t.baseIdentity(), base, now, base, Step{Kind: StepRecoverMoved, Base: base})
		}
	case state.Other:
		if b.Identity().Match(now) == state.Same || t.Base() == base {
			return fmt.Errorf("base %s names transaction %s in flight, but that transaction's base is %s, another directory (%s, not %s): the state was altered; nothing was done", base, id, t.Base(), t.baseIdentity(), now)
		}
	}
	if t.Base() != base {
		// The same directory reached by another path: a bind mount, the
		// base moved since the transaction opened it, its file system
		// mounted elsewhere — or a new directory that got a deleted
		// base's inode, which no birth time tells apart on every file
		// system. While the recorded path still leads to this very
		// directory it is an alias; otherwise only the user can say it
		// was moved.
		if !o.Moved && !sameDir(t.Base(), t.baseIdentity()) {
			return stepErrorf("transaction %s was interrupted applying to %s, which is no longer that directory; %s has its identity (%s) but may be another directory; nothing was done: if %s is that base moved here (or its file system mounted here), %s", id, t.Base(), base, now, base, Step{Kind: StepRecoverMoved, Base: base})
		}
		out.Notes = append(out.Notes, fmt.Sprintf("transaction %s opened this directory as %s; %s is the same directory (%s), and is recovered through it", id, t.Base(), base, now))
	}
	return nil
}

// rollForward finishes the bookkeeping of a commit whose receipt was
// written before it was interrupted: the base holds the committed state.
func (t *Tx) rollForward(ctx context.Context, b *state.Base, jdir string, out *RecoverResult) (*RecoverResult, error) {
	// The receipt was written after the apply was verified: the base
	// holds the committed state, and only the bookkeeping is left.
	out.RolledForward = true
	j, err := t.loadJournal()
	var unsafe *state.UnsafeError
	if errors.As(err, &unsafe) {
		return nil, err
	}
	if err == nil {
		if err := t.keepApplied(j, jdir); err != nil {
			return nil, err
		}
	}
	if t.part != nil {
		// A part landed: its whole records the landing, as the part's
		// commit would have done right after its receipt.
		if err := t.finishWholeAdvance(out.Base); err != nil {
			return nil, err
		}
	}
	if err := t.finishChain(b); err != nil {
		return nil, err
	}
	if err := t.event(eventRollForward, nil); err != nil {
		return nil, err
	}
	if err := b.ClearInflight(); err != nil {
		return nil, err
	}
	if err := journal.Retire(jdir); err != nil {
		return nil, err
	}
	t.settleStaged(ctx)
	res, _, err := t.settledAlready()
	out.Result = res
	return out, err
}

// recoverRollBack restores the base from t's journal, exactly as before
// the apply, and records the transaction as refused (InterruptedApply).
func (t *Tx) recoverRollBack(ctx context.Context, b *state.Base, base, jdir string, o RecoverOptions, out *RecoverResult) (*RecoverResult, error) {
	id := t.ID()
	j, err := t.loadJournal()
	if err != nil {
		return nil, err
	}
	if j.TxID != id || string(j.Base) != t.Base() {
		return nil, fmt.Errorf("journal %s belongs to transaction %s over %s, not %s over %s: it is not acted on", jdir, j.TxID, j.Base, id, t.Base())
	}
	root, r, err := t.openBaseConfirmed(base, o.Moved)
	if err != nil {
		return nil, err
	}
	if r != nil {
		return nil, fmt.Errorf("recover %s: %s; nothing was done: put the directory the transaction opened back at that path and run recover again", base, r.Reason)
	}
	defer root.Close()
	rr, err := journal.Restore(ctx, root, j, jdir)
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w", base, err)
	}
	out.Digest = rr.Digest
	if err := t.rebaseOpen(root, j.Ops); err != nil {
		return nil, fmt.Errorf("recover %s: %w", base, err)
	}
	if out.Displaced, err = t.keepDisplaced(jdir, rr); err != nil {
		return nil, err
	}
	if err := t.event(eventRecovered, map[string]any{"digest": rr.Digest, "displaced": rr.Displaced}); err != nil {
		return nil, err
	}
	set, err := changeset.Load(t.st.Path(changeSetFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if set == nil {
		set = &changeset.Set{}
	}
	digest := rr.Digest
	refusal := refuse(InterruptedApply, nil, "the apply was interrupted and recover rolled the base back; commit the transaction again to retry")
	res, err := t.record(Refused, refusal, set, &settlement{baseNow: base}, digest, digest, nil)
	if err != nil {
		return nil, err
	}
	out.Result = res
	if err := b.ClearInflight(); err != nil {
		return nil, err
	}
	if err := journal.Retire(jdir); err != nil {
		return nil, err
	}
	return out, nil
}

// recoverGoneUnder is --base-gone for a path that holds a directory again:
// the base recorded there was deleted and another directory made in its
// place. Only state recorded at this path for another directory (or one
// that cannot be told from this one) with an interrupted apply is
// cleared, as for any base that is gone; the directory there now is never
// touched.
func (s *Store) recoverGoneUnder(ctx context.Context, base string) (*RecoverResult, error) {
	now, err := identity(base)
	if err != nil {
		return nil, err
	}
	if err := s.ensure(); err != nil {
		return nil, err
	}
	b, id, err := s.inflightRecordedAt(ctx, base, func(b *state.Base) bool { return b.Identity().Match(now) == state.Same })
	if err != nil {
		return nil, err
	}
	if b != nil {
		out, err := s.clearGoneBase(ctx, b, base, id)
		if out != nil {
			out.Notes = append([]string{fmt.Sprintf("%s is another directory than the one transaction %s was applying to when it was interrupted (%s, recorded as %s): that one is gone", base, id, now, b.Identity())}, out.Notes...)
		}
		return out, err
	}
	return nil, fmt.Errorf("--base-gone: %s exists, and no other directory recorded at this path has an interrupted apply; nothing was done (run recover without it)", base)
}

// sameDir reports whether path is, now, the directory with identity id.
func sameDir(path string, id state.Identity) bool {
	now, err := identity(path)
	return err == nil && id.Match(now) == state.Same
}

// finishChain files a committed receipt in the base's chain and makes it
// the head, if the process that wrote it died before doing so. While the
// apply was in flight no other commit to the base could happen, so the
// receipt's previous is the head it was sealed against.
func (t *Tx) finishChain(b *state.Base) error {
	rc, data, err := receipt.Load(t.ReceiptPath())
	if err != nil {
		return fmt.Errorf("transaction %s is recorded as committed but its receipt cannot be read: %w", t.ID(), err)
	}
	head, err := b.Head()
	if err != nil || head == rc.Digest {
		return err
	}
	if rc.Previous != head {
		return fmt.Errorf("receipt %s follows %s, but the base's chain ends at %s: the state was altered; nothing was done", t.ReceiptPath(), rc.Previous, head)
	}
	if err := history.Add(b, rc, data); err != nil {
		return err
	}
	return b.SetHead(rc.Digest)
}

// keepDisplaced moves what a restore saved aside (content someone else
// wrote to a journaled path) out of the journal, which is about to be
// retired, into the transaction's state, and says where.
//
// What an earlier restore of the same journal saved (an in-process
// rollback that failed half-way, or a recover that was killed) is in the
// same directory: it goes with it, even when this restore saved nothing.
func (t *Tx) keepDisplaced(jdir string, rr *journal.RestoreResult) ([]string, error) {
	from := filepath.Join(jdir, "displaced")
	earlier, err := os.ReadDir(from)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(earlier) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("keep displaced files: %w", err)
	}
	// A part's go to the whole transaction, which is kept: a refused
	// part is not (commitPart).
	st := t.whole().st
	keep := st.Path(fmt.Sprintf("displaced-%d", time.Now().UnixNano()))
	if err := os.Rename(from, keep); err != nil {
		return nil, fmt.Errorf("keep displaced files: %w", err)
	}
	if err := safefs.SyncDir(st.Dir()); err != nil {
		return nil, err
	}
	// Each line names the file where it now is, not where the restore
	// first saved it.
	out := make([]string, len(rr.Displaced))
	for i, d := range rr.Displaced {
		out[i] = strings.Replace(d, from+string(filepath.Separator), keep+string(filepath.Separator), 1)
	}
	if len(earlier) > len(rr.Displaced) {
		out = append(out, fmt.Sprintf("%d file(s) an earlier, failed restore of this journal saved: under %s", len(earlier)-len(rr.Displaced), keep))
	}
	return out, nil
}

// recoverOrphan clears an in-flight marker that names a transaction whose
// state is gone or cannot be read (see recovery.Orphan). Called with the
// base's lock held.
func (s *Store) recoverOrphan(ctx context.Context, b *state.Base, out *RecoverResult, cause error) (*RecoverResult, error) {
	id := out.TxID
	found, err := recovery.Orphan(ctx, b, recovery.OrphanOf{
		ID: id, Base: out.Base, Cause: cause, Journal: filepath.Join(s.dir, "tx", id, journalDir),
		CheckJournal: func() error {
			st, err := s.st().Tx(id)
			if err == nil {
				err = st.CheckTree(journalDir, journalKept)
			}
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	out.Orphaned, out.RolledForward, out.Digest = true, found.RolledForward, found.Digest
	out.Displaced = append(out.Displaced, found.Displaced...)
	out.Notes = append(out.Notes, found.Notes...)
	return out, nil
}
