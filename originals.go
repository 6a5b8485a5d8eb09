package airlock

import (
	"path/filepath"

	"github.com/airlockdev/airlock/internal/originals"
)

// originals opens the store of content airlock's commits replaced in this
// transaction's base.
func (t *Tx) originals() (*originals.Store, error) {
	b, err := t.store.st.Base(t.Base())
	if err != nil {
		return nil, err
	}
	return originals.Open(filepath.Join(b.Dir(), "originals"))
}
