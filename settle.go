package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/history"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/selector"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/state"
)

// NotTransactional is what no transaction covers: every receipt and every
// stderr block says so.
var NotTransactional = receipt.NotTransactional

// settlement is the settle context: what a settle learns on its way to
// its receipt and result. The pipeline fills it (the preflight's
// validators and merges, the approval that stood, the commits kept), so
// that the caller's options stay what the caller asked for.
type settlement struct {
	exitCode  *int      // the command's exit code, for the receipt
	startedAt time.Time // when the command started; zero means the open time
	// approved is the approval the receipt records: the one that stood
	// (see approval), not the one asked for.
	approved bool
	// dropCommits lets a discard's staged commits go (see keepCommits).
	dropCommits bool
	// validated are the validators that ran, in order.
	validated []string
	// batchTree, for a landing into a remote validated as part of a
	// batch, is the batch's tip tree the validators ran on.
	batchTree string
	// merged are the paths a commit three-way merged with the base's own
	// changes since open.
	merged []string
	// kept is what keepCommits did at this settle.
	kept *keptCommits
	// unmeasured: a discard could not compute the change set, so whether
	// the staged repository changed is unknown.
	unmeasured bool
	// baseNow is where the base is when it is not at the path it opened
	// at (recover --moved): the receipt is signed as git's config there
	// says.
	baseNow string
}

// settlement starts the settle context of a commit with these options.
func (o CommitOptions) settlement() *settlement {
	return &settlement{exitCode: o.ExitCode, startedAt: o.StartedAt, approved: o.Approve}
}

// DiscardOptions say how to discard a transaction.
type DiscardOptions struct {
	ExitCode  *int      // the command's exit code, for the receipt
	StartedAt time.Time // when the command started; zero means the open time
	// ReceiptCopy, if set, is a second file the receipt is written to.
	ReceiptCopy string
	// DropCommits lets the commits the command made in the staged
	// workspace's copy of the base's repository go with it, instead of
	// keeping them on branch airlock/<id> (see keepCommits). A worktree
	// transaction's commits are in the base's repository already: it
	// refuses the option.
	DropCommits bool
}

// settlement starts the settle context of a discard with these options.
func (o DiscardOptions) settlement() *settlement {
	return &settlement{exitCode: o.ExitCode, startedAt: o.StartedAt, dropCommits: o.DropCommits}
}

// settledAlready reports the first outcome of a transaction that has
// already settled: settling again changes nothing.
func (t *Tx) settledAlready() (*Result, bool, error) {
	status, err := t.Status()
	if err != nil {
		return nil, false, err
	}
	if !status.Settled() {
		return nil, false, nil
	}
	r, err := t.Receipt()
	if err != nil {
		return nil, true, fmt.Errorf("transaction %s is %s but its receipt cannot be read: %w", t.ID(), status, err)
	}
	res := &Result{TxID: t.ID(), Outcome: Outcome(r.Outcome), Added: r.Added, Modified: r.Modified, Deleted: r.Deleted,
		Receipt: r, ReceiptPath: t.st.Path(receiptFile), Repeat: true}
	res.Validators = append(res.Validators, r.Validators...)
	res.Merged = append(res.Merged, r.Merged...)
	return res, true, nil
}

// Discard drops the transaction's changes. The base is not touched.
func (t *Tx) Discard(ctx context.Context, o DiscardOptions) (_ *Result, err error) {
	defer exported(&err)
	res, err := t.discard(ctx, o)
	if res != nil {
		t.noteBranch(ctx, res)
	}
	t.copyReceipt(res, o.ReceiptCopy)
	return res, err
}

func (t *Tx) discard(ctx context.Context, o DiscardOptions) (*Result, error) {
	t.pooling = recycles() && t.rec.Backend == stage.Copy && !t.partLanded()
	unlockTx, err := t.settleLock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockTx()
	if res, done, err := t.settledAlready(); done || err != nil {
		if err == nil && res.Outcome != Discarded {
			return res, fmt.Errorf("transaction %s already settled as %s; nothing to discard", t.ID(), res.Outcome)
		}
		return res, err
	}
	status, err := t.Status()
	if err != nil {
		return nil, err
	}
	if status == StatusInterrupted {
		return nil, interrupted(t.Base(), t.ID())
	}
	if o.DropCommits && t.rec.Backend == stage.Worktree {
		return nil, fmt.Errorf("transaction %s: --drop-commits is for a copy, reflink or overlay transaction; the commits of a worktree transaction are on its branch in the base's repository already (delete it with git branch -D airlock/%s once it is settled)", t.ID(), t.ID())
	}
	// The counts say what was dropped; a staged tree that cannot even be
	// measured is still discarded.
	sc := o.settlement()
	set, err := t.diff(ctx)
	if err != nil {
		set = &changeset.Set{}
		sc.unmeasured = true
	}
	res, err := t.settle(ctx, Discarded, nil, set, sc)
	if res != nil {
		// Discarding drops the staged tree's files, not what its git did
		// to the repository it shares with the base: say so.
		if w := t.branchMoved(ctx); w != "" {
			res.Warnings = append(res.Warnings, w)
		}
		if changed, cerr := t.repoChanged(ctx); cerr == nil && len(changed) > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the command changed the repository the staged tree shared with the base (%s); discarding does not take that back: look at them (a hook or an alias there runs as you with your next git command)", strings.Join(changed, ", ")))
		}
	}
	return res, err
}

// settle records an outcome that leaves the base untouched (no changes,
// discarded, refused).
func (t *Tx) settle(ctx context.Context, out Outcome, r *Refusal, set *changeset.Set, sc *settlement) (*Result, error) {
	digest, err := t.touchedDigest(set)
	if err != nil {
		return nil, err
	}
	if out != Refused && !sc.dropCommits && t.part == nil {
		// The staged workspace goes now, and its repository with it.
		sc.kept = t.keepCommits(ctx, set.GitMeta > 0 || sc.unmeasured)
	}
	res, err := t.record(out, r, set, sc, digest, digest, nil)
	if err != nil {
		return nil, err
	}
	if out != Refused {
		t.settleStaged(ctx)
	}
	if r != nil {
		return res, r
	}
	return res, nil
}

// record writes the receipt and the settling event of a local settle. For
// a commit, base is the locked base whose receipt chain it extends.
func (t *Tx) record(out Outcome, r *Refusal, set *changeset.Set, sc *settlement, baseDigest, resultDigest string, base *state.Base) (*Result, error) {
	prevBase := base
	if prevBase == nil {
		b, err := t.stateBase()
		if err != nil {
			return nil, err
		}
		prevBase = b
	}
	prev, err := prevBase.Head()
	if err != nil {
		return nil, err
	}
	rc := t.newReceipt(out, set, sc, baseDigest, resultDigest, prev)
	if out == Committed {
		rc.Merged = append(rc.Merged, sc.merged...)
	}
	if sc.kept != nil && sc.kept.branch != nil {
		rc.Branch, rc.BranchHead = sc.kept.branch.Name, sc.kept.branch.Head
	} else if t.rec.Backend == stage.Worktree && t.part == nil {
		// A part names no branch: the worktree's is the whole's, which
		// its own receipt names when it settles.
		if br, err := t.Branch(context.Background()); err == nil && br != nil && br.Head != "" {
			rc.Branch, rc.BranchHead = br.Name, br.Head
		}
	}
	if r != nil {
		rc.Refusal = string(r.Kind)
		rc.RefusedPaths = append(rc.RefusedPaths, r.Paths...)
	}
	data, err := t.sealReceipt(context.Background(), rc, sc.baseNow)
	if err != nil {
		return nil, err
	}
	path, err := t.writeReceipt(data)
	if err != nil {
		return nil, err
	}
	res, err := t.settled(out, r, rc, path, set, sc, nil)
	if err != nil {
		return nil, err
	}
	if out == Committed {
		if err := history.Add(base, rc, data); err != nil {
			return nil, err
		}
		if err := base.SetHead(rc.Digest); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// writeReceipt writes a sealed receipt as the transaction's own.
func (t *Tx) writeReceipt(data []byte) (string, error) {
	path := t.st.Path(receiptFile)
	return path, safefs.WriteFile(path, data, 0o600)
}

// settled appends the settling event of the receipt rc, written at path,
// and returns the settle's result: the last step of every settle, a local
// one's (record) and a landing's (recordLanded) alike. extra adds to the
// event's detail.
func (t *Tx) settled(out Outcome, r *Refusal, rc *receipt.Receipt, path string, set *changeset.Set, sc *settlement, extra map[string]any) (*Result, error) {
	a, m, d := set.Counts()
	res := &Result{TxID: t.ID(), Outcome: out, Refusal: r, Added: a, Modified: m, Deleted: d, GitMeta: set.GitMeta,
		Validators: sc.validated, Receipt: publicReceipt(rc), ReceiptPath: path}
	if out == Committed {
		res.Merged = sc.merged
	}
	if sc.kept != nil {
		res.Branch = sc.kept.branch
		res.Warnings = append(res.Warnings, sc.kept.warnings...)
	}
	detail := map[string]any{"receipt": rc.Digest, "added": a, "modified": m, "deleted": d}
	if r != nil {
		detail["refusal"] = string(r.Kind)
		detail["paths"] = rawPaths(r.Paths)
		// cause and remedy are data: each front end says them in its own
		// words (`show` adds the command line's as reason).
		detail["cause"] = r.Reason
		if r.Remedy.Kind != "" {
			detail["remedy"] = r.Remedy
		}
	}
	for k, v := range extra {
		detail[k] = v
	}
	ev := map[Outcome]string{Committed: eventCommitted, Discarded: eventDiscarded, Refused: eventRefused, NoChanges: eventNoChanges}[out]
	if err := t.event(ev, detail); err != nil {
		return nil, err
	}
	return res, nil
}

// copyReceipt writes the --receipt copy once the settle is over. The
// outcome stands whatever happens here: a copy that cannot be written is a
// warning on the result, never a reason to undo or misreport a commit.
func (t *Tx) copyReceipt(res *Result, copyTo string) {
	if copyTo == "" || res == nil || res.ReceiptPath == "" {
		return
	}
	data, err := os.ReadFile(res.ReceiptPath)
	if err == nil {
		err = safefs.WriteFile(copyTo, data, 0o644)
	}
	if err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("--receipt %s: the receipt copy was not written (%v); the receipt is at %s", copyTo, err, res.ReceiptPath))
	}
}

// newReceipt fills the members every receipt of the transaction has, a
// local settle's and a landing's alike.
func (t *Tx) newReceipt(out Outcome, set *changeset.Set, sc *settlement, baseDigest, resultDigest, prev string) *receipt.Receipt {
	a, m, d := set.Counts()
	started := sc.startedAt
	if started.IsZero() {
		started = t.rec.CreatedAt
	}
	excl, _ := selector.New(t.rec.Exclude)
	prot, _ := selector.New(t.rec.Protect)
	rc := &receipt.Receipt{
		TxID: t.ID(), Base: t.Base(), BaseDevice: t.rec.BaseDevice, BaseInode: t.rec.BaseInode, BaseFS: t.rec.BaseFS,
		Backend: t.rec.Backend, Command: plain(t.rec.Command),
		StartedAt: started.UTC(), EndedAt: time.Now().UTC(), ExitCode: sc.exitCode,
		Outcome: string(out), Added: a, Modified: m, Deleted: d,
		ExcludedSelectors: excl.Len(), ProtectedSelectors: prot.Len(), Approved: sc.approved,
		BaseDigest: baseDigest, ResultDigest: resultDigest, DiffDigest: set.Digest(),
		Previous:   prev,
		Validators: append([]string(nil), sc.validated...),
		Undoes:     t.rec.Undoes,
	}
	if t.part != nil && out == Committed {
		rc.PartOf, rc.Paths = t.rec.PartOf, set.Paths()
	}
	return rc
}

// settleStaged removes the staged workspace of a settled transaction. A
// failure leaves it for gc and is recorded, never fatal: the outcome stands.
func (t *Tx) settleStaged(ctx context.Context) {
	if t.part != nil {
		// A part's staged tree is the whole's, which stays open.
		return
	}
	// left_running names what the command left running when it exited:
	// ended by then where it ran contained.
	detail := map[string]any{}
	if len(t.leftovers) > 0 {
		detail["left_running"] = t.leftovers
	}
	if t.contained {
		detail["contained"] = true
	}
	if t.poolTree(ctx) {
		t.event(eventStagedPooled, detail)
		return
	}
	err := t.removeStaged(ctx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		detail["error"] = err.Error()
	}
	t.event(eventStagedRemove, detail)
}
