package recovery

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// Gone resolves an interrupted apply of transaction id over the base at
// path, which no longer exists, with the base's lock held: the journal
// (at jdir) cannot be rolled back into it. The journal — its backups are
// the only copy of what the base held at the paths the apply changed — is
// moved, not removed, next to the base's state; the in-flight marker is
// cleared; and the base's state (receipt chain, originals, that journal)
// is retired to bases/retired/, so that no directory that later gets the
// same identity inherits it. It returns the notes and where the journal
// is kept now ("" when there was none).
func Gone(b *state.Base, path, id, jdir string) (*Found, string, error) {
	out := &Found{}
	kept := ""
	out.Notes = append(out.Notes, fmt.Sprintf("the base %s no longer exists: the interrupted apply of transaction %s cannot be rolled back into it (if it was moved rather than deleted, the paths %s changed may be half-applied there: the journal named below holds what they were)", path, id, id))
	moved := ""
	if _, err := os.Lstat(jdir); err == nil {
		moved = "journal-" + id
		if err := os.Rename(jdir, filepath.Join(b.Dir(), moved)); err != nil {
			return nil, "", fmt.Errorf("keep the journal %s of %s: %w; nothing was cleared", jdir, id, err)
		}
		if err := safefs.SyncDir(filepath.Dir(jdir)); err != nil {
			return nil, "", err
		}
		if err := safefs.SyncDir(b.Dir()); err != nil {
			return nil, "", err
		}
	}
	if err := b.ClearInflight(); err != nil {
		return nil, "", err
	}
	retired, err := b.Retire()
	if err != nil {
		return nil, "", err
	}
	if moved != "" {
		kept = filepath.Join(retired, moved)
		out.Notes = append(out.Notes, fmt.Sprintf("the journal of %s was moved to %s: its backups there (backup/) are the only copy of what %s held, before that apply, at the paths its journal.json lists; nothing else keeps them, and airlock never removes them", id, kept, path))
	} else {
		out.Notes = append(out.Notes, fmt.Sprintf("transaction %s has no journal left: nothing of what %s held before the apply is kept", id, path))
	}
	out.Notes = append(out.Notes, fmt.Sprintf("cleared the in-flight marker of %s; the base's state (receipt chain, originals) was moved to %s", id, retired))
	return out, kept, nil
}
