package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

func newOpenCmd(io IO) *cobra.Command {
	var f txFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "open [flags]",
		Short: "Open a transaction and print its id and staged path",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if f.receipt != "" || f.approve {
				return errors.New("--receipt and --approve belong to `airlock commit ID`, not to open")
			}
			if c.Flags().Changed("validate") {
				// Accepted and forgotten, it would read as a gate that is not there.
				return errors.New("--validate belongs to `airlock commit ID` (or run, land, review), not to open: it adds a validator to a commit, after the project's validate from .airlock.toml")
			}
			st, err := store()
			if err != nil {
				return err
			}
			tx, err := st.Open(c.Context(), f.openOptions(nil))
			if err != nil {
				return err
			}
			for _, w := range tx.Record().Warnings {
				fmt.Fprintf(io.Err, "airlock: warning: %s\n", w)
			}
			if asJSON {
				return writeJSON(io, map[string]any{
					"id": tx.ID(), "path": tx.Path(), "base": tx.Base(),
					"backend": tx.Record().Backend, "port_base": tx.Record().PortBase,
				})
			}
			fmt.Fprintf(io.Out, "%s\n%s\n", tx.ID(), tx.Path())
			return nil
		},
	}
	f.register(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object with id, path, base, backend and port_base")
	return c
}

func newCommitCmd(io IO) *cobra.Command {
	var approve, asJSON, quiet bool
	var validate, receipt, expect string
	c := &cobra.Command{
		Use:   "commit ID",
		Short: "Apply a transaction's change set to its base, all or nothing",
		Args:  oneID,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkValidate(c); err != nil {
				return err
			}
			rpath, err := receiptPath(receipt)
			if err != nil {
				return err
			}
			if expect != "" && !strings.HasPrefix(expect, "sha256:") {
				return fmt.Errorf("--expect-digest %q: want the change set's diff_digest as `airlock show ID --json` prints it (sha256:...)", expect)
			}
			return settle(c.Context(), io, args[0], quiet, asJSON, func(ctx context.Context, tx *airlock.Tx) (*airlock.Result, error) {
				return tx.Commit(ctx, airlock.CommitOptions{Approve: approve, ReceiptCopy: rpath, Validate: validate, ExpectDiffDigest: expect})
			})
		},
	}
	c.Flags().BoolVar(&approve, "approve", false, "approve changes to protected paths")
	c.Flags().StringVar(&validate, "validate", "", validateHelp)
	c.Flags().StringVar(&receipt, "receipt", "", "also write the receipt JSON to `FILE`")
	c.Flags().StringVar(&expect, "expect-digest", "", "commit only the change set you reviewed: `DIGEST` is its diff_digest, as airlock show ID --json prints it; refused ReviewStale if it changed since")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result and receipt as JSON on stdout")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the airlock.* block")
	return c
}

func newDiscardCmd(io IO) *cobra.Command {
	var quiet, dropCommits, asJSON bool
	c := &cobra.Command{
		Use:   "discard ID",
		Short: "Drop a transaction's changes; the base is not touched",
		Args:  oneID,
		RunE: func(c *cobra.Command, args []string) error {
			return settle(c.Context(), io, args[0], quiet, asJSON, func(ctx context.Context, tx *airlock.Tx) (*airlock.Result, error) {
				return tx.Discard(ctx, airlock.DiscardOptions{DropCommits: dropCommits})
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result and receipt as JSON on stdout (as commit --json)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the airlock.* block")
	c.Flags().BoolVar(&dropCommits, "drop-commits", false, "let git commits the command made in the staged workspace go too (by default they are kept on branch airlock/ID in the base's repository)")
	return c
}

// settle loads a transaction, settles it with do, and reports the result.
func settle(ctx context.Context, io IO, id string, quiet, asJSON bool, do func(context.Context, *airlock.Tx) (*airlock.Result, error)) error {
	st, err := store()
	if err != nil {
		return err
	}
	tx, err := st.Tx(id)
	if err != nil {
		return err
	}
	res, err := do(context.WithoutCancel(ctx), tx)
	if res != nil {
		if !quiet {
			writeBlock(io.Err, res)
			noteBranch(ctx, io, tx)
		} else {
			writeWarnings(io.Err, res)
		}
		if asJSON {
			if jerr := writeJSON(io, resultJSON(res)); jerr != nil {
				return jerr
			}
		}
	}
	return err
}

func resultJSON(res *airlock.Result) map[string]any {
	m := map[string]any{
		"tx": res.TxID, "outcome": res.Outcome, "added": res.Added, "modified": res.Modified,
		"deleted": res.Deleted, "receipt_path": res.ReceiptPath, "receipt": res.Receipt,
		"repeat": res.Repeat,
	}
	if res.Refusal != nil {
		m["refusal"] = res.Refusal.Kind
		m["refused_paths"] = rawPaths(res.Refusal.Paths)
		m["reason"] = res.Refusal.Explain(airlock.SurfaceCLI)
	}
	if len(res.Kept) > 0 {
		m["kept"] = rawPaths(res.Kept)
	}
	if len(res.Validators) > 0 {
		m["validators"] = rawPaths(res.Validators)
	}
	if len(res.Merged) > 0 {
		m["merged"] = rawPaths(res.Merged)
	}
	if res.Branch != nil {
		m["branch"], m["branch_head"] = res.Branch.Name, res.Branch.Head
	}
	return m
}

// rawPaths gives paths the receipt's JSON form, in which a path that is
// not valid UTF-8 keeps its bytes ({"base64": ...}) instead of turning
// into U+FFFD.
func rawPaths(paths []string) []airlock.Bytes {
	out := make([]airlock.Bytes, len(paths))
	for i, p := range paths {
		out[i] = airlock.Bytes(p)
	}
	return out
}

// recoverJSON is recover's --json object (docs/json.md).
func recoverJSON(rr *airlock.RecoverResult) map[string]any {
	action := "rolled_back"
	switch {
	case rr.TxID == "":
		action = "nothing"
	case rr.BaseGone:
		action = "base_gone"
	case rr.Orphaned:
		action = "orphaned"
	case rr.RolledForward:
		action = "rolled_forward"
	}
	m := map[string]any{
		"base": rr.Base, "tx": rr.TxID, "action": action,
		"displaced": nonNil(rr.Displaced), "notes": nonNil(rr.Notes),
	}
	if action == "rolled_back" {
		m["digest"] = rr.Digest
	}
	if rr.Journal != "" {
		m["journal"] = rr.Journal
	}
	if rr.Result != nil {
		m["result"] = resultJSON(rr.Result)
	}
	return m
}

func writeJSON(io IO, v any) error {
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func newRecoverCmd(io IO) *cobra.Command {
	var workdir string
	var quiet, asJSON bool
	var o airlock.RecoverOptions
	c := &cobra.Command{
		Use:   "recover [--workdir DIR] [--moved | --base-gone]",
		Short: "Resolve an apply that was interrupted (crash, kill, power loss)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			rr, err := st.RecoverWith(context.WithoutCancel(c.Context()), workdir, o)
			if err != nil {
				return err
			}
			for _, n := range rr.Notes {
				fmt.Fprintf(io.Err, "airlock: %s\n", n)
			}
			switch {
			case rr.TxID == "":
				fmt.Fprintf(io.Err, "airlock: nothing to recover in %s\n", rr.Base)
			case rr.Orphaned, rr.BaseGone:
			case rr.RolledForward:
				fmt.Fprintf(io.Err, "airlock: transaction %s had committed; its leftover journal was retired\n", rr.TxID)
			default:
				fmt.Fprintf(io.Err, "airlock: rolled %s back to its state before transaction %s (digest %s)\n", rr.Base, rr.TxID, rr.Digest)
			}
			for _, d := range rr.Displaced {
				fmt.Fprintf(io.Err, "airlock: kept foreign content: %s\n", d)
			}
			if rr.Result != nil && !quiet {
				writeBlock(io.Err, rr.Result)
			}
			if asJSON {
				return writeJSON(io, recoverJSON(rr))
			}
			return nil
		},
	}
	c.Flags().StringVar(&workdir, "workdir", "", "the base directory (default: the current directory)")
	c.Flags().BoolVar(&asJSON, "json", false, "print what recover found and did as JSON on stdout")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the airlock.* block")
	c.Flags().BoolVar(&o.Moved, "moved", false, "confirm that DIR is the interrupted transaction's base: moved here since it opened, or its disk back under another device number")
	c.Flags().BoolVar(&o.BaseGone, "base-gone", false, "confirm that the base at DIR was deleted for good: clear its interrupted apply (its journal is kept)")
	c.MarkFlagsMutuallyExclusive("moved", "base-gone")
	return c
}
