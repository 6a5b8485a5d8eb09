package airlock

import (
	"errors"
	"io/fs"

	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/state"
)

// stateBase opens the state of this transaction's base: the directory it
// opened, found by the identity recorded then, whatever path reaches it
// now (see state.Store.BaseOf).
func (t *Tx) stateBase() (*state.Base, error) {
	return t.store.st().BaseOf(t.Base(), t.baseIdentity())
}

// originals opens the store of content airlock's commits replaced in this
// transaction's base.
func (t *Tx) originals() (*originals.Store, error) {
	b, err := t.stateBase()
	if err != nil {
		return nil, err
	}
	return openOriginals(b)
}

// openOriginals opens (creating if needed) a base's originals store, its
// directory checked as state.
func openOriginals(b *state.Base) (*originals.Store, error) {
	dir, err := b.OriginalsDir()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return originals.Open(dir)
}

// checkBaseState reads the base's state as a commit will once its apply
// is done (the receipt chain it extends, the originals store keepApplied
// adds to): state there that cannot be trusted (a FIFO for the head
// receipt or the originals index, a directory others can write) refuses
// the commit now, naming it, before the base is touched, rather than
// after the apply.
func (t *Tx) checkBaseState(b *state.Base) error {
	head, err := b.Head()
	if err != nil {
		return err
	}
	if head != "" {
		if _, err := b.ReadReceipt(head); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	orig, err := openOriginals(b)
	if err != nil {
		return err
	}
	_, err = orig.Records()
	return err
}
