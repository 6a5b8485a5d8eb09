package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// recoverOrphan clears an in-flight marker that names a transaction whose
// state is gone or cannot be read: the journal that would roll the base
// back went with it. What can still be known is checked and said — whether
// the base's receipt chain records the commit, what the apply left behind
// under its temporary names (removed) — and the marker is cleared, so that
// open, commit and gc work again. Called with the base's lock held.
func (s *Store) recoverOrphan(ctx context.Context, b *state.Base, out *RecoverResult, cause error) (*RecoverResult, error) {
	id, base := out.TxID, out.Base
	out.Orphaned = true
	out.Notes = append(out.Notes, fmt.Sprintf("the base was marked with an apply of transaction %s in flight, but that transaction's state cannot be used (%v): its journal is gone, so the base cannot be rolled back from it", id, cause))
	committed, err := chainRecords(b, id)
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w; nothing was done", base, err)
	}
	if committed {
		out.RolledForward = true
		out.Notes = append(out.Notes, fmt.Sprintf("the base's receipt chain ends with the committed receipt of %s: its commit had been recorded after the apply was verified, so the base holds its result", id))
	} else if n := keptOriginals(b, id); n > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("the base's originals store kept %d file(s) %s replaced, which it does only once its apply had finished: the base most likely holds its whole change set, but no receipt records it", n, id))
	}
	root, err := safefs.OpenRoot(base)
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w; nothing was done", base, err)
	}
	defer root.Close()
	removed, err := removeLeftovers(ctx, root, id)
	for _, p := range removed {
		out.Notes = append(out.Notes, fmt.Sprintf("removed %s, a temporary file the apply of %s left in the base", filepath.Join(base, p), id))
	}
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w; the in-flight marker was not cleared", base, err)
	}
	if len(removed) == 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("no temporary file of %s (%s*) is left in the base", id, journal.TempPrefix(id)))
	}
	if !committed {
		out.Notes = append(out.Notes, fmt.Sprintf("no receipt records the commit of %s: if its apply had begun, paths of its change set may hold their new content; check the base (for a git repository: git status)", id))
	}
	if err := b.ClearInflight(); err != nil {
		return nil, err
	}
	out.Notes = append(out.Notes, fmt.Sprintf("cleared the in-flight marker of %s: open and commit over %s work again", id, base))
	return out, nil
}

// chainRecords reports whether the head of the base's receipt chain is a
// verified committed receipt of id: the last thing a commit does before it
// clears its marker.
func chainRecords(b *state.Base, id string) (bool, error) {
	head, err := b.Head()
	if err != nil || head == "" {
		return false, err
	}
	data, err := os.ReadFile(chainPath(b, head))
	if err != nil {
		return false, fmt.Errorf("the receipt %s at the head of the chain cannot be read: %w", head, err)
	}
	rc, err := receipt.Verify(data)
	if err != nil {
		return false, fmt.Errorf("the receipt %s at the head of the chain does not verify: %w", head, err)
	}
	return rc.TxID == id && rc.Outcome == string(Committed), nil
}

// keptOriginals counts the originals the store recorded for id.
func keptOriginals(b *state.Base, id string) int {
	store, err := originals.Open(filepath.Join(b.Dir(), "originals"))
	if err != nil {
		return 0
	}
	recs, _ := store.Records()
	n := 0
	for _, r := range recs {
		if r.TxID == id {
			n++
		}
	}
	return n
}

// removeLeftovers removes, anywhere in the base, the entries named with
// id's temporary prefix: without a journal nothing says which directories
// the apply touched. The walk never follows a symlink, skips .git (never
// applied to) and removes through root, so nothing outside the base can be
// reached; the prefix holds the transaction id, so no file of anyone else
// matches it.
func removeLeftovers(ctx context.Context, root *safefs.Root, id string) ([]string, error) {
	prefix := journal.TempPrefix(id)
	var found []string
	err := filepath.WalkDir(root.Path(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), prefix) {
			rel, err := filepath.Rel(root.Path(), p)
			if err != nil {
				return err
			}
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for leftovers of %s in the base: %w", id, err)
	}
	var removed []string
	for _, rel := range found {
		if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("remove leftover %s: %w", filepath.Join(root.Path(), rel), err)
		}
		removed = append(removed, rel)
		if err := root.SyncDir(parentOf(rel)); err != nil {
			return removed, err
		}
	}
	return removed, nil
}
