package state

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/safefs"
)

// receiptsDir, inside a base's state, keeps a copy of every receipt
// committed to the base, named by its digest: the chain `log` walks.
const receiptsDir = "receipts"

// ReceiptPath is where the base's chain keeps the receipt with digest d.
func (b *Base) ReceiptPath(d string) string {
	return filepath.Join(b.dir, receiptsDir, strings.TrimPrefix(d, "sha256:")+".json")
}

// ReadReceipt reads the receipt with digest d from the base's chain, with
// the checks every state file gets: the receipts directory and the file
// must be the user's own and not writable by others, and the file a
// regular one (a FIFO planted there is refused, never waited on). A
// missing receipt is an error matching fs.ErrNotExist.
func (b *Base) ReadReceipt(d string) ([]byte, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	dir := filepath.Join(b.dir, receiptsDir)
	if err := checkDir(dir); err != nil {
		return nil, stateErr("receipt chain", dir, err)
	}
	return readChecked(b.ReceiptPath(d))
}

// WriteReceipt durably files the receipt data, whose digest is d, in the
// base's chain.
func (b *Base) WriteReceipt(d string, data []byte) error {
	if err := b.check(); err != nil {
		return err
	}
	if d == "" || strings.ContainsAny(d, "/\\ \t\r\n") {
		return fmt.Errorf("file receipt in %s: invalid digest %q", b.dir, d)
	}
	if err := ensureDir(filepath.Join(b.dir, receiptsDir)); err != nil {
		return err
	}
	return safefs.WriteFile(b.ReceiptPath(d), data, 0o600)
}

// OriginalsDir is the directory of the base's originals store, checked
// like every state directory. A missing one (no commit kept originals
// yet) is returned with an error matching fs.ErrNotExist.
func (b *Base) OriginalsDir() (string, error) {
	if err := b.check(); err != nil {
		return "", err
	}
	dir := filepath.Join(b.dir, "originals")
	return dir, stateErr("originals store", dir, checkDir(dir))
}
