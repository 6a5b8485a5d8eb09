package airlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/stage"
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
	// Merged are the paths a commit three-way merged: the base had
	// changed them since open too, and what landed holds both sides' edits.
	Merged []string
	// PartOf is set by a partial commit that landed: the transaction it
	// took part of, open with the rest (TxID is the part's own id).
	PartOf string
	// Branch is the git branch this settle kept the command's own commits
	// on (airlock/<id>), nil when it kept none: those a copy, reflink or
	// overlay transaction's command made in its staged repository, fetched
	// into the base's, or a worktree transaction's branch, when it holds
	// commits no other ref contains.
	Branch *Branch
}

// CommitOptions say how to commit a transaction: Commit, Check, Land, Undo
// and LandRemote take them.
type CommitOptions struct {
	// Approve approves changes to protected paths: the user's approval
	// (`--approve`, the review page, an MCP client that asked its user),
	// unless AgentApproval says it is the agent's own.
	Approve bool
	// AgentApproval says the caller is an agent acting for itself (the
	// MCP commit tool's approve: true with no person asked): its Approve
	// stands only where the project's config, as the base holds it now,
	// sets agents_approve = true. Otherwise protected changes refuse the
	// commit ProtectedPathNotApproved, whose remedy (RemedyUserApprove)
	// names the ways a person approves them.
	AgentApproval bool

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
	// ReviewStale and nothing is applied. With Paths it is the digest of
	// the whole change set, of which the paths are a part.
	ExpectDiffDigest string
	// Paths, if set, make the commit partial: only the changes they select
	// land, through every check a commit makes (validation on the base
	// plus the selected part), and the rest stays in the open transaction.
	// Each is relative to the base (an absolute one must lie inside it)
	// and names that path and everything beneath it; gitignore wildcards
	// match as at the base's root, and a leading ! takes back what an
	// earlier one selected. The commit is a transaction of its own, the
	// part (Result.TxID, ID.N), whose receipt names the paths it landed;
	// paths that select the whole change set make a plain commit. A path
	// that leaves the base or selects nothing is a *SelectionError.
	Paths []string
}

// Commit applies the change set to the base through every fail-closed check,
// all or nothing. A refusal returns a *Refusal error together with a Result
// whose receipt records it; the base is then exactly as before and the
// transaction is kept.
//
// The steps, in order: the preflight that Check runs too (compute and
// freeze the change set; take the base's lock; check drift, three-way
// merging what drifted where it can; protected paths, boundaries and
// shared inodes; validate the candidate); then, under the same lock,
// journal and back up; apply; fsync; verify; record the receipt; retire the
// journal.
func (t *Tx) Commit(ctx context.Context, o CommitOptions) (_ *Result, err error) {
	defer exported(&err)
	if len(o.Paths) > 0 {
		res, err := t.commitPart(ctx, o)
		t.copyReceipt(res, o.ReceiptCopy)
		return res, err
	}
	res, err := t.commit(ctx, o)
	if res != nil {
		if w := t.branchMoved(ctx); w != "" {
			res.Warnings = append(res.Warnings, w)
		}
		t.noteBranch(ctx, res)
	}
	t.copyReceipt(res, o.ReceiptCopy)
	return res, err
}

func (t *Tx) commit(ctx context.Context, o CommitOptions) (*Result, error) {
	// A test that cancels the commit holds it at a pause point until the
	// commit has seen the cancel (fault.WhenDone).
	defer fault.WhenDone(ctx, "commit-cancelled")()
	// One settle of a transaction at a time: a second commit of the same
	// transaction waits, then reports the first outcome.
	unlockTx, err := t.settleLock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockTx()
	if err := t.finishParts(ctx); err != nil {
		return nil, err
	}
	t.pooling = recycles() && t.rec.Backend == stage.Copy && !t.partLanded()
	return t.commitLocked(ctx, o)
}

// commitLocked is commit with the transaction's settle lock held.
func (t *Tx) commitLocked(ctx context.Context, o CommitOptions) (*Result, error) {
	if res, done, err := t.settledAlready(); done || err != nil {
		return res, err
	}
	p, err := t.preflightLocal(ctx, t.commitSpace(), o)
	if err != nil {
		return nil, err
	}
	defer p.release()
	sc := o.settlement()
	sc.validated, sc.merged = p.validated, p.merged
	// The receipt records the approval that stood, not the one asked for.
	sc.approved = p.approved
	if err := t.cancelled(ctx); err != nil {
		return nil, err
	}
	switch {
	case p.set.Empty():
		return t.settle(ctx, NoChanges, nil, p.set, sc)
	case p.refusal != nil:
		return t.settle(ctx, Refused, p.refusal, p.set, sc)
	}
	fault.Point("checked")
	if err := t.cancelled(ctx); err != nil {
		return nil, err
	}
	if err := t.canSign(ctx); err != nil {
		return nil, err
	}
	// From the journal on, the commit runs to its end whatever the
	// caller's context says: a commit cut short is the one thing a
	// transaction must not be, and its result must say what happened.
	return t.apply(context.WithoutCancel(ctx), p.root, p.base, p.prepared, p.ops, sc)
}

// cancelled is the error of a commit whose caller gave up before its
// journal was written: nothing was applied and nothing recorded, and the
// transaction is as it was (open or refused), to be committed again.
func (t *Tx) cancelled(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return &CancelledError{TxID: t.ID(), Cause: context.Cause(ctx)}
}

// CancelledError is a commit stopped by its caller's context before it
// wrote its journal, or by SIGINT or SIGTERM while it validated (Cause is
// then an *InterruptedError): the base was not touched, no outcome was
// recorded, and the transaction is kept as it was. A context that ends
// after the journal does not stop the commit, which then reports its real
// outcome.
type CancelledError struct {
	TxID  string
	Cause error
}

func (e *CancelledError) Error() string {
	var irq *InterruptedError
	if errors.As(e.Cause, &irq) {
		return interruptedMessage(e.TxID, irq)
	}
	return fmt.Sprintf("the commit of %s was cancelled before anything was written (%v): the base was not touched and the transaction is kept as it was; commit it again to apply it", e.TxID, e.Cause)
}

func (e *CancelledError) Unwrap() error { return e.Cause }

// apply is the commit from the journal on, with the base locked and every
// check passed.
func (t *Tx) apply(ctx context.Context, root *safefs.Root, base *state.Base, set *changeset.Set, ops []journal.Op, sc *settlement) (*Result, error) {
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
			return t.settle(ctx, Refused, refuse(BaseDrift, []string{d.Path}, "changed in the base while the commit was being prepared"), set, sc)
		}
		var e *journal.EscapeError
		if errors.As(err, &e) {
			os.RemoveAll(jdir)
			return t.settle(ctx, Refused, refuse(BoundaryEscape, []string{e.Path}, "a directory on the way was replaced by a symlink while the commit was being prepared"), set, sc)
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
			kept = " (what another process wrote meanwhile was kept: " + strings.Join(displaced, "; ") + ")"
		}
		var d *journal.DriftError
		if errors.As(err, &d) {
			return t.settle(ctx, Refused, refuse(BaseDrift, []string{d.Path}, "changed in the base while the commit was applying; what the commit had applied was rolled back exactly%s", kept), set, sc)
		}
		var busy *journal.BusyError
		if errors.As(err, &busy) {
			return t.settle(ctx, Refused, refuse(BaseDrift, []string{busy.Path}, "%v; the commit was rolled back exactly and the file is back in place; let the process finish or close the file, then commit again%s", busy, kept), set, sc)
		}
		return t.settle(ctx, Refused, refuse(ApplyFailed, nil, "%v; the base was rolled back exactly%s", err, kept), set, sc)
	}
	fault.Point("applied")
	if len(applied.Kept) > 0 {
		// Kept directories are still there: the digest says so.
		if resultDigest, err = keptDigest(root, j.Ops, applied.Kept); err != nil {
			return nil, err
		}
	}
	// Before the receipt, which names the branch; the staged workspace,
	// and its repository, go right after it. A part has neither: they are
	// the whole transaction's.
	if t.part == nil {
		sc.kept = t.keepCommits(ctx, set.GitMeta > 0)
	}
	res, err := t.record(Committed, nil, set, sc, baseDigest, resultDigest, base)
	if err != nil {
		// Not recorded as committed: the commit must not stand.
		if status, serr := t.Status(); serr == nil && status != StatusCommitted {
			if _, rerr := t.rollBack(ctx, root, base, j, jdir, nil, true, err); rerr != nil {
				return nil, rerr
			}
			return nil, fmt.Errorf("record the commit of %s: %w; the base was rolled back exactly and the transaction is kept", t.ID(), err)
		}
		return nil, stepErrorf("record the commit of %s: %w; %s", t.ID(), err, Step{Kind: StepRecover, Base: t.Base()})
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
	if t.part != nil {
		// What landed, measured before the base's lock is let go: the
		// whole transaction's base manifest takes it (advance).
		if t.part.landed, err = landedEntries(root, j.Ops); err != nil {
			return nil, fmt.Errorf("%s landed, but %w", t.ID(), err)
		}
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
		return stepErrorf("apply to %s failed (%v) and the rollback failed too (%v); the journal is kept: %s", t.Base(), cause, err, Step{Kind: StepRecover, Base: t.Base()})
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
	displaced = append(displaced, restored.Notes()...)
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
