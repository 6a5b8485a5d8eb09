package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/history"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/receipt"
)

// Log is what was committed to a base, newest first.
type Log struct {
	Base    string
	Entries []*Receipt
	// Broken, when set, says where the chain of receipts could not be
	// followed or verified: the entries stop there.
	Broken string
	// UndoGone names the entries, newest first, that can no longer be
	// undone: gc removed their transaction's state (the journal of what
	// it applied), or its record of what it applied is gone.
	UndoGone []string
	// Signers maps the digest of each signed entry to who signed it, as
	// CheckSignatures found it; an entry not in it is unsigned.
	Signers map[string]string
}

// CheckSignatures checks the signature of every signed receipt in lg
// against the allowed signers file (allowedSigners, else
// gpg.ssh.allowedSignersFile as git reads it in the base), filling in
// lg.Signers. At the first that does not check, lg breaks there: Broken
// says whose it is and why, and the entries stop before it.
func (s *Store) CheckSignatures(ctx context.Context, lg *Log, allowedSigners string) (err error) {
	defer exported(&err)
	lg.Signers = map[string]string{}
	if !slices.ContainsFunc(lg.Entries, func(rc *Receipt) bool { return rc.Signature != "" }) {
		return nil
	}
	b, err := s.st().Base(lg.Base)
	if err != nil {
		return err
	}
	rs := make([]signedReceipt, len(lg.Entries))
	for i, rc := range lg.Entries {
		rs[i].rc = (*receipt.Receipt)(rc)
		if rc.Signature != "" {
			if rs[i].data, err = b.ReadReceipt(rc.Digest); err != nil {
				return err
			}
		}
	}
	cfg, err := signatureConfig(ctx, lg.Base, allowedSigners)
	if err != nil {
		return err
	}
	checks, err := checkSignatures(ctx, cfg, rs)
	if err != nil {
		return err
	}
	for i, rc := range lg.Entries {
		if sc := checks[i]; sc.Err != nil {
			lg.Broken = fmt.Sprintf("the receipt of transaction %s (%s) is not signed by an allowed signer: %v", rc.TxID, rc.Digest, sc.Err)
			lg.Entries = lg.Entries[:i]
			return nil
		} else if sc.Signed {
			lg.Signers[rc.Digest] = sc.Signer
		}
	}
	return nil
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
	b, err := s.st().Base(base)
	if err != nil {
		return nil, err
	}
	chain, err := history.Walk(b)
	if err != nil {
		return nil, err
	}
	out := &Log{Base: base, Broken: chain.Broken}
	for _, rc := range chain.Entries {
		out.Entries = append(out.Entries, publicReceipt(rc))
		if s.undoGone(rc.TxID) {
			out.UndoGone = append(out.UndoGone, rc.TxID)
		}
	}
	return out, nil
}

// undoGone reports whether the commit of transaction id can no longer be
// undone: its state is gone, or holds no record of what it applied. State
// that cannot be read is not called gone: undo says what is wrong with it.
func (s *Store) undoGone(id string) bool {
	st, err := s.st().Tx(id)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	_, err = st.ReadFile(appliedFile)
	return errors.Is(err, fs.ErrNotExist)
}

// LoggedReceipt is a receipt found in a base's receipt chain.
type LoggedReceipt struct {
	Base string // the base whose chain holds it
	Path string // the receipt file, in the chain
}

// LoggedReceipt finds the receipt of a commit of transaction id in the
// receipt chains of the bases the state root knows, where the receipt
// stays after gc removed the transaction's state: every commit a log
// lists is there. Only the verified part of each chain is searched (what
// log lists). A commit found in no chain is an error matching
// fs.ErrNotExist.
func (s *Store) LoggedReceipt(id string) (_ *LoggedReceipt, err error) {
	defer exported(&err)
	if err := s.ensure(); err != nil {
		return nil, err
	}
	bases, err := s.st().Bases()
	if err != nil {
		return nil, err
	}
	for _, b := range bases {
		chain, err := history.Walk(b)
		if err != nil {
			return nil, err
		}
		for _, rc := range chain.Entries {
			if rc.TxID == id {
				return &LoggedReceipt{Base: b.Path(), Path: b.ReceiptPath(rc.Digest)}, nil
			}
		}
	}
	return nil, fmt.Errorf("transaction %s not found, and no base's receipt chain holds a commit of it: %w", id, fs.ErrNotExist)
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
		undoes:   id,
	})
	if err != nil {
		return nil, err
	}
	if changed, err := history.Reverse(tx.Path(), j, orig.Open); err != nil || len(changed) > 0 {
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
