package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockdev/airlock/internal/stage"
)

// Branch is the git branch of a transaction opened with the worktree
// backend: the commits its command made in the staged tree stay on it.
type Branch struct {
	Name string // airlock/<id>
	// Head is the commit the branch names now, or named when the staged
	// worktree was removed; "" when the branch is gone.
	Head  string
	Start string // the commit it was made at: the base's HEAD at open
	// Kept is set once the staged worktree is removed and the branch was
	// kept because it holds commits no other ref contains; a branch that
	// held nothing new is deleted with the worktree.
	Kept bool
	// Detached names the extra branch that keeps commits the command made
	// on a detached HEAD, when the transaction's branch could not.
	Detached string
}

// Branch reports the transaction's git branch: a worktree transaction's,
// or the branch another transaction kept its staged repository's new
// commits on when it settled; nil when there is none.
func (t *Tx) Branch(ctx context.Context) (_ *Branch, err error) {
	defer exported(&err)
	if t.rec.Backend != stage.Worktree {
		// Another backend's staged repository is a copy; its new commits
		// were fetched into the base's at settle, if there were any.
		return t.settledBranch()
	}
	b, err := stage.WorktreeBranch(ctx, t.Path())
	if err != nil || b == nil {
		return nil, err
	}
	out := &Branch{Name: b.Name, Head: b.Head, Start: b.Start, Kept: b.Removed && b.Kept, Detached: b.Detached}
	if b.Removed && !b.Kept {
		out.Head = "" // deleted with the worktree
	}
	return out, nil
}

// KeptNote is the line that says a settled transaction's branch was kept,
// "" when there is nothing to say.
func (b *Branch) KeptNote() string {
	if b == nil || !b.Kept {
		return ""
	}
	s := fmt.Sprintf("kept branch %s at %s: it holds commits no other ref contains", b.Name, b.Head)
	if b.Detached != "" {
		s += "; commits made on a detached HEAD are on branch " + b.Detached
	}
	return s
}

// gcWorktrees resolves git worktrees that airlock made under its state
// and that no transaction owns any more: those whose transaction was
// removed, those of an open that died between `git worktree add` and
// writing its open record (whose state gc then removes), and those of
// settled transactions whose removal failed. It returns items updated and
// added for what it did.
func (s *Store) gcWorktrees(ctx context.Context, o GCOptions, bases map[string]bool, items []GCItem) ([]GCItem, error) {
	ids, err := s.st().IDs()
	if err != nil {
		return items, err
	}
	// Transactions that never finished opening, and whose opener is dead.
	crashed := map[string]string{} // staged path → id
	for _, id := range ids {
		if len(o.IDs) > 0 && !slices.Contains(o.IDs, id) {
			continue
		}
		st, err := s.st().Tx(id)
		if err != nil {
			continue
		}
		if _, err := os.Lstat(st.Path(recordFile)); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		staged := st.Path(stagedDir)
		if stage.HasWorktreeRecord(staged) && !stage.OpenInProgress(staged) {
			crashed[staged] = id
		}
	}
	txRoot := filepath.Join(s.dir, "tx")
	owned := func(rel string) bool {
		parts := strings.Split(rel, "/")
		if len(parts) < 2 || parts[0] != "tx" {
			return false // trash, or anything else in the state root
		}
		id := parts[1]
		if tx, err := s.Tx(id); err == nil {
			st, err := tx.Status()
			return err != nil || !st.Settled()
		}
		staged := filepath.Join(txRoot, id, stagedDir)
		if _, ok := crashed[staged]; ok {
			return false
		}
		// No record and not known to have crashed: an open that is still
		// writing it, or state gc cannot read. Leave it.
		return stage.OpenInProgress(staged)
	}
	swept, err := stage.SweepWorktrees(ctx, stage.SweepOptions{
		Under:  s.dir,
		Bases:  slices.Sorted(maps.Keys(bases)),
		Staged: slices.Sorted(maps.Keys(crashed)),
		Owned:  owned,
		DryRun: o.DryRun,
	})
	for _, w := range swept {
		reason := fmt.Sprintf("git worktree %s removed from %s", w.Path, w.Repo)
		if o.DryRun {
			reason = fmt.Sprintf("git worktree %s in %s", w.Path, w.Repo)
		}
		if w.Branch != nil {
			b := &Branch{Name: w.Branch.Name, Head: w.Branch.Head, Kept: w.Branch.Kept, Detached: w.Branch.Detached}
			if n := b.KeptNote(); n != "" {
				reason += "; " + n
			} else if w.Branch.Head != "" {
				reason += "; branch " + b.Name + " deleted (it held nothing new)"
			}
		}
		id := ""
		if parts := strings.Split(w.Rel, "/"); len(parts) >= 2 && parts[0] == "tx" {
			id = parts[1]
		}
		if _, ok := crashed[filepath.Join(txRoot, id, stagedDir)]; ok && id != "" {
			// Its open died; with its worktree resolved, its state is
			// garbage.
			it := GCItem{ID: id, Removed: true, Bytes: diskUsage(filepath.Join(txRoot, id)),
				Reason: "its open died after its git worktree was made; " + reason}
			if !o.DryRun {
				if rerr := s.st().RemoveTx(id); rerr != nil {
					err = errors.Join(err, rerr)
					continue
				}
			}
			items = slices.DeleteFunc(items, func(x GCItem) bool { return x.ID == id })
			items = append(items, it)
			continue
		}
		if id == "" {
			id = w.Rel
		}
		items = append(items, GCItem{ID: id, Removed: true, Reason: reason})
	}
	return items, err
}
