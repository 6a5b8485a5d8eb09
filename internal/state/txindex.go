package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/airlockdev/airlock/internal/safefs"
)

// TxIndexFile is the name, in the state root, of the index of settled
// transactions: a cache that lets an open skip reading the records of
// transactions that are over.
const TxIndexFile = "txindex.json"

// txIndexVersion is the index format; an index of another version is not
// read (it is rebuilt).
const txIndexVersion = 1

// txIndexFile is the index file's content. Digest is the sha256 of the JSON
// with Digest empty: the file is written without fsync (it is a cache,
// rebuilt when lost), so a crash may leave it torn, and a torn or edited
// index must never be read as a shorter list.
type txIndexFile struct {
	Version int      `json:"version"`
	Settled []string `json:"settled"`
	Digest  string   `json:"digest"`
}

func (ix txIndexFile) seal() string {
	ix.Digest = ""
	b, _ := json.Marshal(ix)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TxIndex is the store's transactions as one pass under the global lock
// sees them: every transaction directory there is, and which of them the
// index file records as settled. The records stay the source of truth:
// a transaction the index does not name is read from its records by the
// caller, and only a transaction whose records the caller read and found
// settled is added. Settled is final (settling again changes nothing), so
// a settled entry needs no re-reading while its directory is there; an id
// whose directory is gone is dropped, and the transaction being allocated
// is dropped too, since its id may be one that gc freed and `--id` reused.
//
// An index file that is missing, unreadable, not the user's own private
// regular file, of another version or not matching its digest is ignored:
// every transaction is then read from its records, and the file rewritten.
type TxIndex struct {
	s       *Store
	ids     []string        // every transaction directory, sorted
	settled map[string]bool // of ids, those the index (or this pass) found settled
	changed bool
	forgot  bool // forget dropped a settled id
}

// loadTxIndex lists the transaction directories and reads the index file.
// The caller holds the global lock.
func (s *Store) loadTxIndex() (*TxIndex, error) {
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	ix := &TxIndex{s: s, ids: ids, settled: map[string]bool{}}
	on := s.readTxIndex()
	for _, id := range ids {
		if on[id] {
			ix.settled[id] = true
		}
	}
	// Entries of removed transactions, or an index to rebuild: rewrite.
	ix.changed = on == nil || len(ix.settled) != len(on)
	return ix, nil
}

// readTxIndex reads the index file's settled ids, or nil if it cannot be
// trusted (see TxIndex).
func (s *Store) readTxIndex() map[string]bool {
	data, err := readChecked(filepath.Join(s.dir, TxIndexFile))
	if err != nil {
		return nil
	}
	var ix txIndexFile
	if err := json.Unmarshal(data, &ix); err != nil || ix.Version != txIndexVersion || ix.Digest != ix.seal() {
		return nil
	}
	on := make(map[string]bool, len(ix.Settled))
	for _, id := range ix.Settled {
		if ValidID(id) != nil {
			return nil
		}
		on[id] = true
	}
	return on
}

// Unsettled lists, sorted, the transactions the index does not record as
// settled: those whose records the caller must read.
func (ix *TxIndex) Unsettled() []string {
	out := make([]string, 0, len(ix.ids)-len(ix.settled))
	for _, id := range ix.ids {
		if !ix.settled[id] {
			out = append(out, id)
		}
	}
	return out
}

// Settled records that the transaction id is settled, as the caller read
// from its records.
func (ix *TxIndex) Settled(id string) {
	if _, there := slices.BinarySearch(ix.ids, id); there && !ix.settled[id] {
		ix.settled[id] = true
		ix.changed = true
	}
}

// forget drops id from the index: the transaction is not settled.
func (ix *TxIndex) forget(id string) {
	if ix.settled[id] {
		delete(ix.settled, id)
		ix.changed, ix.forgot = true, true
	}
}

// save writes the index file if it changed. It is a cache, replaced
// atomically (rename) but not fsync'd: lost, the next pass reads the
// records instead. Only when the pass forgot a settled id (the one being
// allocated) must the rewrite last, since the old file would call an open
// transaction settled: it is then fsync'd, or the file removed, or the
// error returned.
func (ix *TxIndex) save() error {
	if !ix.changed {
		return nil
	}
	out := txIndexFile{Version: txIndexVersion, Settled: make([]string, 0, len(ix.settled))}
	for _, id := range ix.ids {
		if ix.settled[id] {
			out.Settled = append(out.Settled, id)
		}
	}
	out.Digest = out.seal()
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	path := filepath.Join(ix.s.dir, TxIndexFile)
	if ix.forgot {
		if err := safefs.WriteFile(path, data, 0o600); err != nil {
			if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				return fmt.Errorf("index %s names an open transaction settled and can be neither rewritten (%v) nor removed (%w): remove it by hand", path, err, rerr)
			}
			return safefs.SyncDir(ix.s.dir)
		}
		return nil
	}
	tmp, err := os.CreateTemp(ix.s.dir, "."+TxIndexFile+".tmp-*")
	if err != nil {
		return nil
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return nil
}
