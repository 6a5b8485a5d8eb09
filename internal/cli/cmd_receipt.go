package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/jsonout"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/state"
)

// verifyOptions are receipt verify's argument and flags.
type verifyOptions struct {
	receipt                 string // FILE|ID; "" with remote
	remote, branch, workdir string
	allowedSigners          string
	json                    bool
	limits                  remoteLimitFlags
}

func newReceiptCmd(io IO) *cobra.Command {
	c := &cobra.Command{Use: "receipt", Short: "Work with receipts"}
	group(c)
	var o verifyOptions
	verify := &cobra.Command{
		Use:   "verify FILE|ID | --remote REMOTE --branch BRANCH",
		Short: "Check a receipt's integrity and required fields (exit 0 valid, 1 invalid)",
		Long: `Check a receipt's integrity and required fields (exit 0 valid, 1 invalid).

With --remote and --branch it checks, from the remote alone, every receipt
landed into that branch: each commit on its first-parent history that
carries the trailer Airlock-Tx must have a note in refs/notes/airlock that
verifies as that transaction's receipt for that commit, chained to the one
before it, and the commit's change against its parent must be the one its
receipt's digests name.

A signed receipt must be signed by a key the allowed signers file lists
(--allowed-signers, else gpg.ssh.allowedSignersFile), in namespace
airlock-receipt; an unsigned one verifies but is reported "unsigned", and
commits between landings that carry no receipt are listed as "no-receipt".`,
		Args: func(c *cobra.Command, args []string) error {
			if (o.remote == "") != (o.branch == "") {
				return errors.New("--remote and --branch go together: name the remote and the branch whose receipts to verify")
			}
			if o.remote != "" {
				if len(args) != 0 {
					return errors.New("receipt verify --remote takes no FILE or ID: it verifies every receipt on the branch")
				}
				return nil
			}
			if len(args) != 1 {
				return errors.New("receipt verify takes one receipt FILE or transaction ID")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.receipt = args[0]
			}
			return runReceiptVerify(c.Context(), io, o)
		},
	}
	verify.Flags().StringVar(&o.remote, "remote", "", "verify the receipts landed into a git remote: a remote name or a URL (with --branch)")
	verify.Flags().StringVar(&o.branch, "branch", "", "the remote branch whose receipts to verify (with --remote)")
	verify.Flags().StringVar(&o.workdir, "workdir", "", "with --remote: the repository whose remotes REMOTE may name (default: the current directory)")
	verify.Flags().StringVar(&o.allowedSigners, "allowed-signers", "", "the allowed signers file (ssh-keygen's format) signed receipts are checked against (default: gpg.ssh.allowedSignersFile)")
	verify.Flags().BoolVar(&o.json, "json", false, "print {path, valid, receipt} as JSON ({path, valid, error} when invalid)")
	o.limits.register(verify)
	c.AddCommand(verify)
	return c
}

func runReceiptVerify(ctx context.Context, io IO, o verifyOptions) error {
	limits, err := o.limits.limits(o.remote)
	if err != nil {
		return err
	}
	if err := checkAllowedSigners(o.allowedSigners); err != nil {
		return err
	}
	if o.remote != "" {
		st, err := store()
		if err != nil {
			return err
		}
		lg, err := st.RemoteLog(ctx, airlock.RemoteLogOptions{Dir: o.workdir, Remote: o.remote, Branch: o.branch, Limits: limits, AllowedSigners: o.allowedSigners})
		if err != nil {
			return err
		}
		if lg.Broken != "" {
			return &exitError{code: 1, msg: fmt.Sprintf("the receipts on %s of %s do not verify (%d verified before the break): %s", lg.Branch, lg.Remote, len(lg.Entries), lg.Broken)}
		}
		newest := ""
		if len(lg.Entries) > 0 {
			newest = " newest=" + lg.Entries[0].Receipt.Digest
		}
		unsigned := len(lg.Unsigned())
		fmt.Fprintf(io.Out, "ok %s %s head=%s receipts=%d%s signed=%d unsigned=%d unreceipted=%d\n", lg.Remote, lg.Branch, lg.Head, len(lg.Entries), newest, len(lg.Entries)-unsigned, unsigned, len(lg.Unreceipted))
		writeSignatures(io, lg)
		return nil
	}
	path, chain, err := receiptFor(o.receipt)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read receipt: %w", err)
	}
	r, err := receipt.Verify(data)
	if err == nil && chain != "" && r.TxID != o.receipt {
		// The chain named it a moment ago; a file swapped since is not
		// the receipt asked for.
		err = fmt.Errorf("it is the receipt of transaction %s, not %s", r.TxID, o.receipt)
	}
	if err != nil {
		if o.json {
			if jerr := writeJSON(io, jsonout.Verify{Chain: chain, Error: err.Error(), Path: path, Valid: false}); jerr != nil {
				return jerr
			}
		}
		return &exitError{code: 1, msg: fmt.Sprintf("receipt %s is invalid: %v", path, err)}
	}
	sig, err := checkSignatureOf(ctx, data, path, chain, o)
	if err != nil {
		return err
	}
	if sig.Err != nil {
		msg := fmt.Sprintf("receipt %s is not signed by an allowed signer: %v", path, sig.Err)
		if o.json {
			if jerr := writeJSON(io, jsonout.Verify{Chain: chain, Error: msg, Path: path, Valid: false}); jerr != nil {
				return jerr
			}
		}
		return &exitError{code: 1, msg: msg}
	}
	if o.json {
		return writeJSON(io, jsonout.Verify{Chain: chain, Path: path, Receipt: data, Signer: sig.Signer, Valid: true})
	}
	signed := "unsigned"
	if sig.Signed {
		signed = "signed by " + sig.Signer
	}
	fmt.Fprintf(io.Out, "ok %s tx=%s outcome=%s digest=%s %s\n", path, r.TxID, r.Outcome, r.Digest, signed)
	if chain != "" {
		fmt.Fprintf(io.Err, "read from the receipt chain of %s: gc removed the state of transaction %s\n", chain, r.TxID)
	}
	return nil
}

// receiptFor resolves FILE|ID: an existing file wins; otherwise a valid id
// names the transaction's receipt, or, once gc removed the transaction's
// state, the copy its base's receipt chain keeps (chain names that base).
func receiptFor(arg string) (path, chain string, err error) {
	if _, err := os.Stat(arg); err == nil || strings.ContainsRune(arg, '/') {
		return arg, "", nil
	}
	if state.ValidID(arg) != nil {
		return arg, "", nil
	}
	st, err := store()
	if err != nil {
		return "", "", err
	}
	tx, err := st.Tx(arg)
	if errors.Is(err, fs.ErrNotExist) {
		lr, lerr := st.LoggedReceipt(arg)
		if errors.Is(lerr, fs.ErrNotExist) {
			return "", "", err // not found, in the state or any chain
		}
		if lerr != nil {
			return "", "", lerr
		}
		return lr.Path, lr.Base, nil
	}
	if err != nil {
		return "", "", err
	}
	return tx.ReceiptPath(), "", nil
}

// checkSignatureOf checks a local receipt's signature with the signing
// configuration git reads where the receipt belongs: the transaction's
// base (its own, or the chain's that keeps it), else the current
// directory.
func checkSignatureOf(ctx context.Context, data []byte, path, chain string, o verifyOptions) (airlock.SignatureCheck, error) {
	dir := chain
	if dir == "" {
		if rc, err := receipt.Verify(data); err == nil {
			if fi, err := os.Stat(rc.Base); err == nil && fi.IsDir() {
				dir = rc.Base
			}
		}
	}
	if dir == "" {
		dir = "."
	}
	return airlock.CheckSignature(ctx, data, dir, o.allowedSigners)
}

// writeSignatures names, after a remote branch's ok line, who signed each
// receipt (and each one that is unsigned, saying so when a signed one
// comes before it), and every commit between the landings that no
// receipt vouches for.
func writeSignatures(io IO, lg *airlock.RemoteLog) {
	for i, e := range lg.Entries {
		if e.Signer != "" {
			fmt.Fprintf(io.Out, "signed %s tx=%s by %s\n", e.Commit, e.Receipt.TxID, e.Signer)
			continue
		}
		after := ""
		for _, older := range lg.Entries[i+1:] {
			if older.Signer != "" {
				after = " (after signed receipts: its landing was not signed)"
				break
			}
		}
		fmt.Fprintf(io.Out, "unsigned %s tx=%s%s\n", e.Commit, e.Receipt.TxID, after)
	}
	for _, u := range lg.Unreceipted {
		fmt.Fprintf(io.Out, "no-receipt %s %s\n", u.Commit, percentEscape(u.Subject, "%", true))
	}
}

// checkAllowedSigners refuses an --allowed-signers that is not a file up
// front, even where no receipt is signed: a check against a file that is
// not there would say nothing.
func checkAllowedSigners(path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("--allowed-signers %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("--allowed-signers %s: not a regular file (an allowed signers file, ssh-keygen's format, one \"PRINCIPAL KEYTYPE KEY\" a line)", path)
	}
	return nil
}
