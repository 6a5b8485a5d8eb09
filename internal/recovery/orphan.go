package recovery

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// committedOutcome is a committed receipt's outcome.
const committedOutcome = "committed"

// OrphanOf names an interrupted apply whose transaction's state is gone
// or cannot be read.
type OrphanOf struct {
	ID, Base string
	Cause    error  // why the transaction's state cannot be used
	Journal  string // where its journal would be
	// CheckJournal gives the journal the checks every state file gets
	// (owner, mode, no symlink).
	CheckJournal func() error
}

// Found is what a recovery found and did: the caller's result says it.
type Found struct {
	// RolledForward: the base's receipt chain records the commit, so the
	// base holds its result.
	RolledForward bool
	Digest        string   // of the rollback, where there was one
	Displaced     []string // content saved before a path was restored
	Notes         []string // what it found and did, one sentence each
}

// Orphan clears an in-flight marker that names a transaction whose
// state is gone or cannot be read: the journal that would roll the base
// back went with it. What can still be known is checked and said — whether
// the base's receipt chain records the commit, what the apply left behind
// under its temporary names (removed) — and the marker is cleared, so that
// open, commit and gc work again. Called with the base's lock held.
//
// o says which transaction, over which base, and how to check its
// journal's state files before one byte of it is trusted.
func Orphan(ctx context.Context, b *state.Base, o OrphanOf) (*Found, error) {
	id, base, cause := o.ID, o.Base, o.Cause
	out := &Found{}
	var unsafe *state.UnsafeError
	if errors.As(cause, &unsafe) {
		// State someone else could have written is never read.
		return nil, fmt.Errorf("base %s has an interrupted apply of transaction %s, whose state is unsafe: %w", base, id, cause)
	}
	committed, err := chainRecords(b, id)
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w; nothing was done", base, err)
	}
	if journal.Exists(o.Journal) {
		return orphanJournal(ctx, b, o, out, committed)
	}
	out.Notes = append(out.Notes, fmt.Sprintf("the base was marked with an apply of transaction %s in flight, but that transaction's state cannot be used (%v): its journal is gone, so the base cannot be rolled back from it", id, cause))
	if committed {
		out.RolledForward = true
		out.Notes = append(out.Notes, fmt.Sprintf("the base's receipt chain ends with the committed receipt of %s: its commit had been recorded after the apply was verified, so the base holds its result", id))
	} else if n := keptOriginals(b, id); n > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("the base's originals store kept %d file(s) %s replaced, which it does only once its apply had finished: the base most likely holds its whole change set, but no receipt records it", n, id))
	}
	root, err := safefs.OpenRootNoFollow(base)
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
	data, err := b.ReadReceipt(head)
	if err != nil {
		return false, fmt.Errorf("the receipt %s at the head of the chain cannot be read: %w", head, err)
	}
	rc, err := receipt.Verify(data)
	if err != nil {
		return false, fmt.Errorf("the receipt %s at the head of the chain does not verify: %w", head, err)
	}
	return rc.TxID == id && rc.Outcome == committedOutcome, nil
}

// keptOriginals counts the originals the store recorded for id.
func keptOriginals(b *state.Base, id string) int {
	dir, err := b.OriginalsDir()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	store, err := originals.Open(dir)
	if err != nil {
		return 0
	}
	recs, _ := store.Records()
	n := 0
	for _, r := range recs {
		if r.TxID == id && r.Kind == "" { // a checkpoint's records are no commit's
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

// orphanJournal resolves the marker from the journal that survives
// in a transaction whose other state cannot be read. The journal vouches
// for itself (its digest, paths beneath the base, its transaction and
// base); one that does not is not acted on and the marker stays.
func orphanJournal(ctx context.Context, b *state.Base, o OrphanOf, out *Found, committed bool) (*Found, error) {
	id, base, cause, jdir := o.ID, o.Base, o.Cause, o.Journal
	// The journal gets the checks every state file gets (owner, mode, no
	// symlink) before one byte of it is trusted.
	var j *journal.Journal
	err := o.CheckJournal()
	if err == nil {
		j, err = journal.Load(jdir)
	}
	if err == nil && (j.TxID != id || string(j.Base) != base) {
		err = fmt.Errorf("journal %s belongs to transaction %s over %s, not %s over %s", jdir, j.TxID, j.Base, id, base)
	}
	if err != nil {
		return nil, fmt.Errorf("base %s has an interrupted apply of transaction %s, whose state cannot be read (%v) and whose journal cannot be used: %w; nothing was done", base, id, cause, err)
	}
	out.Notes = append(out.Notes, fmt.Sprintf("the base was marked with an apply of transaction %s in flight, but that transaction's state cannot be used (%v); its journal survives and verifies", id, cause))
	if committed {
		out.RolledForward = true
		out.Notes = append(out.Notes, fmt.Sprintf("the base's receipt chain ends with the committed receipt of %s: its commit had been recorded after the apply was verified, so the base holds its result; its journal was retired", id))
	} else {
		root, err := safefs.OpenRootNoFollow(base)
		if err != nil {
			return nil, fmt.Errorf("recover %s: %w; nothing was done", base, err)
		}
		defer root.Close()
		rr, err := journal.Restore(ctx, root, j, jdir)
		if err != nil {
			return nil, fmt.Errorf("recover %s: %w", base, err)
		}
		out.Digest = rr.Digest
		out.Notes = append(out.Notes, fmt.Sprintf("rolled %s back from that journal to its state before %s (digest %s, as the journal recorded)", base, id, rr.Digest))
		if ents, _ := os.ReadDir(filepath.Join(jdir, "displaced")); len(ents) > 0 {
			// The transaction's own directory cannot be trusted to keep
			// them (nor what an earlier, failed restore saved there):
			// they go next to the base's state.
			keep := filepath.Join(b.Dir(), fmt.Sprintf("displaced-%s-%d", id, time.Now().UnixNano()))
			if err := os.Rename(filepath.Join(jdir, "displaced"), keep); err != nil {
				return nil, fmt.Errorf("keep displaced files: %w; the journal %s is kept", err, jdir)
			}
			if err := safefs.SyncDir(b.Dir()); err != nil {
				return nil, err
			}
			out.Displaced = append(append(out.Displaced, rr.Displaced...), "saved under "+keep)
		}
	}
	if err := b.ClearInflight(); err != nil {
		return nil, err
	}
	if err := journal.Retire(jdir); err != nil {
		return nil, err
	}
	out.Notes = append(out.Notes, fmt.Sprintf("cleared the in-flight marker of %s: open and commit over %s work again; the transaction's unreadable state is left for you (airlock gc %s removes it)", id, base, id))
	return out, nil
}

// parentOf is the parent directory of a slash path, "" at the top.
func parentOf(rel string) string {
	d := filepath.Dir(rel)
	if d == "." {
		return ""
	}
	return filepath.ToSlash(d)
}
