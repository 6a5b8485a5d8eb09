package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlockdev/airlock/internal/recovery"
	"github.com/airlockdev/airlock/internal/state"
)

// eventBaseGone settles a transaction whose apply was interrupted over a
// base that no longer exists: nothing can be rolled back into it, and its
// journal was moved out of the transaction (see clearGoneBase).
const eventBaseGone = "base_gone"

// goneBase reports the absolute, symlink-resolved path dir names when no
// directory is there any more: a base that was deleted or moved away.
func goneBase(dir string) (string, bool) {
	if dir == "" {
		return "", false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	if _, err := os.Lstat(abs); !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	return resolveMissing(abs), true
}

// recoverGone is recover for a base path where no directory is left: the
// state recorded for that path is found by its base.json, and an apply it
// marks in flight is cleared by clearGoneBase. cause is why the path could
// not be opened as a base.
func (s *Store) recoverGone(ctx context.Context, path string, cause error) (*RecoverResult, error) {
	if _, err := os.Lstat(s.dir); err != nil {
		return nil, cause
	}
	if err := s.ensure(); err != nil {
		return nil, err
	}
	b, id, err := s.inflightRecordedAt(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("%w; no interrupted apply over %s is recorded, so there is nothing to recover", cause, path)
	}
	return s.clearGoneBase(ctx, b, path, id)
}

// inflightRecordedAt finds the base state recorded for path (a directory
// that was there, deleted or moved away, or the one there now) that marks
// an apply in flight, other than skip; nil when there is none. The index
// of applies in flight names them by the path they were made over; state
// an earlier version marked (and could not be moved) is found by its
// base.json.
func (s *Store) inflightRecordedAt(ctx context.Context, path string, skip func(*state.Base) bool) (*state.Base, string, error) {
	indexed, err := s.st().InflightNaming(ctx, path, state.Identity{}, nil, true)
	if err != nil {
		return nil, "", err
	}
	for _, e := range indexed {
		if skip == nil || !skip(e.Base) {
			return e.Base, e.TxID, nil
		}
	}
	bases, err := s.st().BasesRecordedAt(path)
	if err != nil {
		return nil, "", err
	}
	for _, b := range bases {
		if skip != nil && skip(b) {
			continue
		}
		id, ok, err := b.Inflight()
		if err != nil {
			return nil, "", err
		}
		if ok {
			return b, id, nil
		}
	}
	return nil, "", nil
}

// clearGoneBase resolves an interrupted apply of transaction id over the
// base at path, which no longer exists (deleted, or moved away; or a new
// directory has its identity): the journal cannot be rolled back
// into it. The journal — its backups are the only copy of what the base
// held at the paths the apply changed — is moved, not removed, next to the
// base's state; the in-flight marker is cleared; the base's state
// (receipt chain, originals, that journal) is retired to
// bases/retired/, so that no directory that later gets the same identity
// inherits it; and the transaction is settled (base_gone), so
// that gc can remove it. Notes say each of these, with the paths.
func (s *Store) clearGoneBase(ctx context.Context, b *state.Base, path, id string) (*RecoverResult, error) {
	unlock, err := b.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := &RecoverResult{Base: path, BaseGone: true}
	if cur, ok, err := b.Inflight(); err != nil || !ok || cur != id {
		return out, err
	}
	out.TxID = id
	t, terr := s.Tx(id)
	var unsafe *state.UnsafeError
	if errors.As(terr, &unsafe) {
		return nil, fmt.Errorf("the base %s no longer exists and an apply of transaction %s over it was interrupted, but that transaction's state is unsafe: %w; nothing was done", path, id, terr)
	}
	if terr == nil {
		unlockTx, err := t.st.TryLock()
		if errors.Is(err, state.ErrLocked) {
			return nil, fmt.Errorf("transaction %s, whose apply over %s is marked in flight, is locked by another airlock process right now; nothing was done: try again once it has finished", id, path)
		}
		if err != nil {
			return nil, err
		}
		defer unlockTx()
	}
	found, journal, err := recovery.Gone(b, path, id, filepath.Join(s.dir, "tx", id, journalDir))
	if err != nil {
		return nil, err
	}
	out.Journal = journal
	out.Notes = append(out.Notes, found.Notes...)
	if t != nil {
		if err := t.event(eventBaseGone, map[string]any{"base": path, "journal": out.Journal}); err != nil {
			return nil, err
		}
		t.settleStaged(ctx)
		out.Notes = append(out.Notes, fmt.Sprintf("transaction %s is settled (its base is gone); `airlock gc %s` removes what is left of it", id, id))
	}
	return out, nil
}
