package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/state"
)

func newReceiptCmd(io IO) *cobra.Command {
	c := &cobra.Command{Use: "receipt", Short: "Work with receipts"}
	group(c)
	var asJSON bool
	verify := &cobra.Command{
		Use:   "verify FILE|ID",
		Short: "Check a receipt's integrity and required fields (exit 0 valid, 1 invalid)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("receipt verify takes one receipt FILE or transaction ID")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			path, err := receiptFor(args[0])
			if err != nil {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("read receipt: %w", err)
			}
			r, err := receipt.Verify(data)
			if err != nil {
				if asJSON {
					if jerr := writeJSON(io, map[string]any{"path": path, "valid": false, "error": err.Error()}); jerr != nil {
						return jerr
					}
				}
				return &exitError{code: 1, msg: fmt.Sprintf("receipt %s is invalid: %v", path, err)}
			}
			if asJSON {
				return writeJSON(io, map[string]any{"path": path, "valid": true, "receipt": json.RawMessage(data)})
			}
			fmt.Fprintf(io.Out, "ok %s tx=%s outcome=%s digest=%s\n", path, r.TxID, r.Outcome, r.Digest)
			return nil
		},
	}
	verify.Flags().BoolVar(&asJSON, "json", false, "print {path, valid, receipt} as JSON ({path, valid, error} when invalid)")
	c.AddCommand(verify)
	return c
}

// receiptFor resolves FILE|ID: an existing file wins; otherwise a valid id
// names the transaction's receipt.
func receiptFor(arg string) (string, error) {
	if _, err := os.Stat(arg); err == nil || strings.ContainsRune(arg, '/') {
		return arg, nil
	}
	if state.ValidID(arg) != nil {
		return arg, nil
	}
	st, err := store()
	if err != nil {
		return "", err
	}
	tx, err := st.Tx(arg)
	if err != nil {
		return "", err
	}
	return tx.ReceiptPath(), nil
}
