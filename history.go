package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// chain files a committed receipt under the base's chain (the copy of
// every receipt committed to the base, named by its digest, that `log`
// walks).
func chain(b *state.Base, rc *receipt.Receipt, data []byte) error {
	return b.WriteReceipt(rc.Digest, data)
}

// Log is what was committed to a base, newest first.
type Log struct {
	Base    string
	Entries []*Receipt
	// Broken, when set, says where the chain of receipts could not be
	// followed or verified: the entries stop there.
	Broken string
}

// Log walks the base's receipt chain from its newest commit back,
// verifying each receipt and each link.
func (s *Store) Log(dir string) (_ *Log, err error) {
	defer exported(&err)
	base, err := resolveBase(dir)
	if err != nil {
		return nil, err
	}
	if err := s.checkBase(base); err != nil {
		return nil, err
	}
	b, err := s.st.Base(base)
	if err != nil {
		return nil, err
	}
	head, err := b.Head()
	if err != nil {
		return nil, err
	}
	out := &Log{Base: base}
	seen := map[string]bool{}
	for d := head; d != ""; {
		if seen[d] {
			out.Broken = fmt.Sprintf("the chain loops at %s", d)
			break
		}
		seen[d] = true
		p := b.ReceiptPath(d)
		data, err := b.ReadReceipt(d)
		var unsafe *state.UnsafeError
		if errors.As(err, &unsafe) {
			// Never read, and never passed over: a chain that cannot be
			// trusted is not shown as a shorter one.
			return nil, err
		}
		if err != nil {
			out.Broken = fmt.Sprintf("receipt %s is missing (%v)", d, unwrapPathErr(err))
			break
		}
		rc, err := receipt.Verify(data)
		if err != nil {
			out.Broken = fmt.Sprintf("receipt %s does not verify: %v", p, err)
			break
		}
		if rc.Digest != d {
			out.Broken = fmt.Sprintf("receipt %s has digest %s, but the chain names %s", p, rc.Digest, d)
			break
		}
		out.Entries = append(out.Entries, publicReceipt(rc))
		d = rc.Previous
	}
	return out, nil
}

// UndoOptions say which commit to revert.
type UndoOptions struct {
	Base string // "" means the current directory
	ID   string // "" means the newest commit to the base
	CommitOptions
}

// Undo reverts a committed transaction as a new transaction through the
// same commit pipeline: every path it changed is put back to its state
// before that commit, from the originals airlock kept. It is refused, not
// forced, when a path it would restore has changed since the commit.
func (s *Store) Undo(ctx context.Context, o UndoOptions) (_ *Result, err error) {
	defer exported(&err)
	base, err := resolveBase(o.Base)
	if err != nil {
		return nil, err
	}
	id := o.ID
	if id == "" {
		lg, err := s.Log(base)
		if err != nil {
			return nil, err
		}
		if len(lg.Entries) == 0 {
			return nil, fmt.Errorf("nothing was committed to %s; nothing to undo", base)
		}
		id = lg.Entries[0].TxID
	}
	target, err := s.Tx(id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && s.logged(base, id) {
			return nil, fmt.Errorf("transaction %s was committed to %s, but gc has removed its state and the originals it replaced; it can no longer be undone", id, base)
		}
		return nil, err
	}
	if !sameDir(base, target.baseIdentity()) {
		// The same directory reached by another path (a bind mount, the
		// base moved) is the same base.
		return nil, fmt.Errorf("transaction %s was over %s, not %s", id, target.Base(), base)
	}
	if st, err := target.Status(); err != nil {
		return nil, err
	} else if st != StatusCommitted {
		return nil, fmt.Errorf("transaction %s is %s, not committed; only a commit can be undone", id, st)
	}
	j, err := target.readJournal(appliedFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("transaction %s has no record of what it applied (removed by gc?); it cannot be undone", id)
		}
		return nil, err
	}
	orig, err := target.originals()
	if err != nil {
		return nil, err
	}
	for _, op := range j.Ops {
		if op.Before.Kind == manifest.KindFile && !orig.Has(op.Before.Digest) {
			return nil, fmt.Errorf("the content %s had before transaction %s is no longer kept; it cannot be undone", op.Path, id)
		}
	}
	tx, err := s.open(ctx, OpenOptions{
		Base: base, Exclude: target.rec.Exclude, NoDefaultExclude: true,
		Protect: target.rec.Protect, NoDefaultProtect: true, Backend: target.rec.Backend,
		NoConfig: true, Command: []string{"airlock", "undo", id},
	}, &replay{
		project:  &project.Project{Root: string(target.rec.Project), Under: string(target.rec.Under), Cfg: config.Default()},
		validate: undoGate(base, target),
	})
	if err != nil {
		return nil, err
	}
	if changed, err := reverse(tx.Path(), j, orig.Open); err != nil || len(changed) > 0 {
		dctx := context.WithoutCancel(ctx)
		if err != nil {
			tx.Discard(dctx, DiscardOptions{})
			return nil, fmt.Errorf("undo %s: %w", id, err)
		}
		// Refused, and so kept (exit 75 promises it): discarding it here
		// recorded the refusal as a discard. Its staged workspace is the
		// base as it is, with none of the reversal: committing it changes
		// nothing; undo again once the paths are as the commit left them.
		r := refuse(BaseDrift, changed, "changed since transaction %s committed; undo will not overwrite them. The undo transaction %s is kept, refused, with nothing reverted: discard it, or put those paths back as %s left them and run airlock undo %s again", id, tx.ID(), id, id)
		res, err := tx.settle(dctx, Refused, r, emptySet(), o.settlement())
		tx.copyReceipt(res, o.ReceiptCopy)
		return res, err
	}
	return tx.Commit(ctx, o.CommitOptions)
}

// undoGate is the project validate an undo runs, since an undo is a commit
// like any other and the project's validate is a gate no caller lowers:
// the base's .airlock.toml's as it is now; where that file no longer
// parses (a config broken since must not block an undo), the one the
// reverted transaction ran under.
func undoGate(base string, target *Tx) string {
	if cfg, err := config.Load(base); err == nil {
		return cfg.Validate
	}
	return target.rec.Validate
}

// logged reports whether the base's receipt chain names a commit of id.
func (s *Store) logged(base, id string) bool {
	lg, err := s.Log(base)
	if err != nil {
		return false
	}
	for _, rc := range lg.Entries {
		if rc.TxID == id {
			return true
		}
	}
	return false
}

func emptySet() *changeset.Set { return &changeset.Set{} }

// reverse turns every path the applied journal j changed, in the staged
// tree dir, back to its state before the apply. It first checks that each
// path still holds exactly what the apply left; those that do not are
// returned and nothing is changed.
func reverse(dir string, j *journal.Journal, open func(string) (*os.File, error)) ([]string, error) {
	root, err := safefs.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var changed []string
	for _, op := range j.Ops {
		if err := journal.Matches(root, op.Path, op.After); err != nil {
			changed = append(changed, op.Path)
		}
	}
	if len(changed) > 0 {
		return changed, nil
	}
	ops := make([]journal.Op, len(j.Ops))
	for i, op := range j.Ops {
		ops[i] = journal.Op{Path: op.Path, Before: op.After, After: op.Before}
	}
	sort.Slice(ops, func(a, b int) bool { return ops[a].Path < ops[b].Path })
	return nil, journal.ApplyFrom(root, j.TxID, ops, open)
}
