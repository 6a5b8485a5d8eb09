package hook

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlockdev/airlock"
)

// realPath is p made absolute and free of symlinks where it exists.
func realPath(p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// within reports whether p is dir or lies beneath it.
func within(p, dir string) bool {
	if p == "" || dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(rel)
}

// storeExists reports whether the state root is there. A hook that runs
// in a project airlock never touched must not create it.
func (r *Runner) storeExists() bool {
	_, err := os.Stat(r.Store.Dir())
	return err == nil
}

// transactions loads every transaction in the store, skipping ones that
// cannot be read (a hook answers for the one it can find).
func (r *Runner) transactions() ([]*airlock.Tx, error) {
	if !r.storeExists() {
		return nil, nil
	}
	ids, err := r.Store.IDs()
	if err != nil {
		return nil, err
	}
	var out []*airlock.Tx
	for _, id := range ids {
		tx, err := r.Store.Tx(id)
		if err != nil {
			continue
		}
		out = append(out, tx)
	}
	return out, nil
}

// find returns the unsettled transaction whose workspace holds dir, or nil.
// Under `airlock run` its own transaction (AIRLOCK_TX) comes first, and
// there dir may also be the base itself: the same-path view shows the
// staged workspace at the base's path.
func (r *Runner) find(dir string) (*airlock.Tx, error) {
	if dir == "" {
		return nil, nil
	}
	dir = realPath(dir)
	if id := r.getenv("AIRLOCK_TX"); id != "" && r.storeExists() {
		tx, err := r.Store.Tx(id)
		if err == nil && unsettled(tx) && (within(dir, realPath(tx.Path())) || within(dir, tx.Base())) {
			return tx, nil
		}
	}
	txs, err := r.transactions()
	if err != nil {
		return nil, err
	}
	var best *airlock.Tx
	for _, tx := range txs {
		staged := tx.Path()
		if !within(dir, staged) && !within(dir, realPath(staged)) {
			continue
		}
		if !unsettled(tx) {
			continue
		}
		if best == nil || len(staged) > len(best.Path()) {
			best = tx
		}
	}
	return best, nil
}

// byWorkspace returns the transaction, settled or not, whose staged
// workspace is exactly path.
func (r *Runner) byWorkspace(path string) (*airlock.Tx, error) {
	p := realPath(path)
	txs, err := r.transactions()
	if err != nil {
		return nil, err
	}
	for _, tx := range txs {
		if tx.Path() == path || realPath(tx.Path()) == p || filepath.Clean(tx.Path()) == filepath.Clean(path) {
			return tx, nil
		}
	}
	return nil, nil
}

func unsettled(tx *airlock.Tx) bool {
	st, err := tx.Status()
	return err == nil && !st.Settled()
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
