package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/state"
)

// GCOptions select what gc removes.
type GCOptions struct {
	// OlderThan keeps transactions that settled more recently than this.
	OlderThan time.Duration
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// IDs, when set, limits gc to these transactions and allows removing
	// refused ones and open ones whose owner process is gone.
	IDs []string
}

// GCItem is one transaction gc looked at.
type GCItem struct {
	ID      string
	Status  Status
	Bytes   int64 // disk its state uses
	Removed bool  // removed (or, in a dry run, would be)
	Reason  string
}

// GC removes the state of settled transactions, and the originals no
// remaining transaction needs. It never removes an open transaction whose
// owner process is alive, never an interrupted one, and a refused or open
// one only when named by id.
func (s *Store) GC(ctx context.Context, o GCOptions) ([]GCItem, int64, error) {
	if err := s.ensure(); err != nil {
		return nil, 0, err
	}
	ids := o.IDs
	named := len(ids) > 0
	if !named {
		all, err := s.st.IDs()
		if err != nil {
			return nil, 0, err
		}
		ids = all
	}
	var items []GCItem
	var freed int64
	bases := map[string]bool{}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return items, freed, err
		}
		tx, err := s.Tx(id)
		var corrupt *state.CorruptError
		if err != nil && named && errors.As(err, &corrupt) {
			// The user named it: a transaction whose state is corrupt is
			// removed whole (its staged tree too), never acted on.
			it := GCItem{ID: id, Status: StatusCorrupt, Bytes: diskUsage(filepath.Join(s.dir, "tx", id)), Removed: true, Reason: "corrupt, named"}
			if !o.DryRun {
				if err := s.st.RemoveTx(id); err != nil {
					return items, freed, err
				}
			}
			freed += it.Bytes
			items = append(items, it)
			continue
		}
		if err != nil {
			if named {
				return items, freed, err
			}
			items = append(items, GCItem{ID: id, Reason: "kept: " + err.Error()})
			continue
		}
		bases[tx.Base()] = true
		it := GCItem{ID: id, Bytes: diskUsage(tx.StateDir())}
		it.Status, err = tx.Status()
		if err != nil {
			it.Reason = "kept: " + err.Error()
			items = append(items, it)
			continue
		}
		it.Removed, it.Reason = gcDecision(tx, it.Status, named, o.OlderThan)
		if it.Removed && s.inFlight(tx) {
			// Its journal is what recover needs, whatever its status says.
			it.Removed, it.Reason = false, "kept: its base marks its apply in flight; run airlock recover"
		}
		if it.Removed && !o.DryRun {
			if err := tx.removeStaged(ctx); err != nil {
				return items, freed, err
			}
			if err := s.st.RemoveTx(id); err != nil {
				return items, freed, err
			}
		}
		if it.Removed {
			freed += it.Bytes
		}
		items = append(items, it)
	}
	items, err := s.gcWorktrees(ctx, o, bases, items)
	if err != nil {
		return items, freed, err
	}
	if !o.DryRun {
		for b := range bases {
			n, err := s.pruneOriginals(b)
			if err != nil {
				return items, freed, err
			}
			freed += n
		}
	}
	return items, freed, nil
}

// inFlight reports whether the transaction's base names it as the apply in
// flight (or cannot tell: then it is kept too).
func (s *Store) inFlight(tx *Tx) bool {
	b, err := s.st.Base(tx.Base())
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	id, ok, err := b.Inflight()
	return err != nil || (ok && id == tx.ID())
}

func gcDecision(tx *Tx, st Status, named bool, olderThan time.Duration) (bool, string) {
	switch st {
	case StatusInterrupted:
		return false, "kept: its apply was interrupted; run airlock recover"
	case StatusOpen:
		if alive(tx.rec.PID) && tx.rec.PID != os.Getpid() {
			return false, fmt.Sprintf("kept: open, owner process %d is alive", tx.rec.PID)
		}
		if !named {
			return false, "kept: open; commit or discard it, or name it to gc"
		}
		return true, "open, owner gone, named"
	case StatusRefused:
		if !named {
			return false, "kept: refused; fix and commit it, discard it, or name it to gc"
		}
		return true, "refused, named"
	}
	settled := tx.rec.CreatedAt
	if evs, err := tx.Events(); err == nil && len(evs) > 0 {
		settled = evs[len(evs)-1].Time
	}
	if age := time.Since(settled); age < olderThan {
		return false, fmt.Sprintf("kept: settled %s ago", age.Round(time.Second))
	}
	return true, string(st)
}

// alive reports whether a process exists (signal 0 reaches it, or it
// exists but is not ours).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// pruneOriginals drops originals no remaining transaction over the base
// needs: neither as a merge base (its stat facts are in an unsettled
// transaction's base manifest) nor for undo (named by a committed
// transaction's applied journal).
func (s *Store) pruneOriginals(base string) (int64, error) {
	b, err := s.st.Base(base)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	dir := filepath.Join(b.Dir(), "originals")
	if _, err := os.Stat(dir); err != nil {
		return 0, nil
	}
	ids, err := s.st.IDs()
	if err != nil {
		return 0, err
	}
	var open []*manifest.Manifest
	undo := map[string]bool{}
	for _, id := range ids {
		tx, err := s.Tx(id)
		if err != nil {
			return 0, fmt.Errorf("cannot tell whether transaction %s needs kept originals (%w); nothing pruned", id, err)
		}
		if tx.Base() != base {
			continue
		}
		st, err := tx.Status()
		if err != nil {
			return 0, err
		}
		switch {
		case st == StatusCommitted:
			if j, err := journal.LoadFile(tx.st.Path(appliedFile)); err == nil {
				for _, op := range j.Ops {
					undo[op.Before.Digest] = true
				}
			}
		case !st.Settled():
			m, err := tx.loadManifest(baseManifestFile)
			if err != nil {
				return 0, err
			}
			open = append(open, m)
		}
	}
	store, err := originals.Open(dir)
	if err != nil {
		return 0, err
	}
	return store.Prune(func(r originals.Record) bool {
		if undo[r.Entry.Digest] {
			return true
		}
		return slices.ContainsFunc(open, func(m *manifest.Manifest) bool {
			e, ok := m.Lookup(r.Entry.Path)
			return ok && manifest.SameStat(*e, r.Entry)
		})
	})
}

// diskUsage sums the sizes of the files under dir. A dir that is a
// symlink (a worktree transaction's staged subdirectory) is followed.
func diskUsage(dir string) int64 {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
