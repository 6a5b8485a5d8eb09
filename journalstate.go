package airlock

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/state"
)

// journalKept is the directory of a journal where a restore keeps content
// someone else wrote to a journaled path (a symlink among it is data, never
// followed).
const journalKept = "displaced"

// checkJournal refuses the transaction's live journal — the journal file,
// every backup, what a restore kept aside — unless all of it passes the
// checks every state file gets (the user's own, not writable by group or
// others, no symlink, FIFO or device), before commit, recover or a
// rollback reads a backup into the base, moves one into the originals
// store or removes the journal. A transaction without a journal passes.
func (t *Tx) checkJournal() error {
	err := t.st.CheckTree(journalDir, journalKept)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var unsafe *state.UnsafeError
	if errors.As(err, &unsafe) {
		step := Step{Kind: StepRecover, Base: t.Base()}
		unsafe.Fix = fmt.Sprintf("make it yours and private again (mode 0700 for directories, 0600 for files) or put the real file back in place of a symlink, then %s; do not remove it: its backups may be the only copy of what the base held before the commit", step)
		return &StepError{Err: err, Steps: []Step{step}}
	}
	return err
}

// loadJournal reads the live journal after checkJournal, through the
// state checks, and refuses it unless its digest matches.
func (t *Tx) loadJournal() (*journal.Journal, error) {
	if err := t.checkJournal(); err != nil {
		return nil, err
	}
	return t.readJournal(journal.Path(journalDir))
}

// readJournal reads a journal file of the transaction (the live one, or
// the applied copy undo reverses) through the state checks: a symlink is
// refused, never followed. A missing file matches fs.ErrNotExist.
func (t *Tx) readJournal(name string) (*journal.Journal, error) {
	b, err := t.st.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return journal.Decode(t.st.Path(name), b)
}
