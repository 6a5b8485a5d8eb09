package cli

import (
	"context"
	"errors"
	"fmt"
	iopkg "io"
	"slices"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

func newLogCmd(io IO) *cobra.Command {
	var workdir string
	var asJSON bool
	c := &cobra.Command{
		Use:   "log [--workdir DIR] [--json]",
		Short: "The transactions committed to this base, newest first",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			lg, err := st.Log(workdir)
			if err != nil {
				return err
			}
			if asJSON {
				entries := lg.Entries
				if entries == nil {
					entries = []*airlock.Receipt{}
				}
				if err := writeJSON(io, map[string]any{"base": lg.Base, "entries": entries, "broken": lg.Broken}); err != nil {
					return err
				}
			} else {
				for _, r := range lg.Entries {
					fmt.Fprintf(io.Out, "%s  %s  +%d ~%d -%d  %s\n", r.EndedAt.Local().Format("2006-01-02 15:04:05"), r.TxID, r.Added, r.Modified, r.Deleted, r.Digest)
				}
			}
			// A broken chain fails with --json too, so that a script that
			// checks only the exit code cannot take a tampered history as sound.
			if lg.Broken != "" {
				return fmt.Errorf("the receipt chain of %s is broken: %s", lg.Base, lg.Broken)
			}
			return nil
		},
	}
	c.Flags().StringVar(&workdir, "workdir", "", "the base directory (default: the current directory)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the chain as JSON")
	return c
}

func newUndoCmd(io IO) *cobra.Command {
	var workdir, receipt string
	var approve, quiet, asJSON bool
	c := &cobra.Command{
		Use:   "undo [ID] [--workdir DIR]",
		Short: "Revert a committed transaction (default: the newest) as a new transaction",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			rpath, err := receiptPath(receipt)
			if err != nil {
				return err
			}
			o := airlock.UndoOptions{Base: workdir, SettleOptions: airlock.SettleOptions{Approve: approve, ReceiptCopy: rpath}}
			if len(args) == 1 {
				o.ID = args[0]
			}
			res, err := st.Undo(context.WithoutCancel(c.Context()), o)
			if res != nil && !quiet {
				writeBlock(io.Err, res)
			}
			if res != nil && asJSON {
				if jerr := writeJSON(io, resultJSON(res)); jerr != nil {
					return jerr
				}
			}
			return err
		},
	}
	c.Flags().StringVar(&workdir, "workdir", "", "the base directory (default: the current directory)")
	c.Flags().BoolVar(&approve, "approve", false, "approve restoring protected paths")
	c.Flags().StringVar(&receipt, "receipt", "", "also write the receipt JSON to `FILE`")
	c.Flags().BoolVar(&asJSON, "json", false, "print the undo transaction's result and receipt as JSON on stdout (as commit --json)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the airlock.* block")
	return c
}

func newLandCmd(io IO) *cobra.Command {
	var validate string
	var approve, quiet, asJSON bool
	c := &cobra.Command{
		Use:   "land ID... [--validate CMD]",
		Short: "Integrate several transactions in order, each validated on its exact candidate",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, ids []string) error {
			if err := checkValidate(c); err != nil {
				return err
			}
			st, err := store()
			if err != nil {
				return err
			}
			results := st.Land(context.WithoutCancel(c.Context()), ids, airlock.SettleOptions{Validate: validate, Approve: approve})
			refused, failed := 0, 0
			for _, l := range results {
				if l.Result != nil && !quiet {
					writeBlock(io.Err, l.Result)
				}
			}
			out := io.Out
			if asJSON {
				// The table's lines say nothing the JSON does not.
				out = iopkg.Discard
			}
			entries := []map[string]any{}
			for _, l := range results {
				e := map[string]any{"tx": l.ID}
				if l.Result != nil {
					e["result"] = resultJSON(l.Result)
				}
				var r *airlock.Refusal
				switch {
				case errors.As(l.Err, &r):
					refused++
					fmt.Fprintf(out, "refused  %s  %s\n", l.ID, r.Error())
				case l.Err != nil:
					failed++
					fmt.Fprintf(out, "failed   %s  %v\n", l.ID, l.Err)
					e["error"] = l.Err.Error()
				default:
					fmt.Fprintf(out, "%-8s %s  +%d ~%d -%d\n", landWord(l.Result), l.ID, l.Result.Added, l.Result.Modified, l.Result.Deleted)
				}
				entries = append(entries, e)
			}
			if asJSON {
				if err := writeJSON(io, map[string]any{"transactions": entries}); err != nil {
					return err
				}
			}
			switch {
			case failed > 0:
				return fmt.Errorf("%d of %d transactions could not be landed", failed, len(ids))
			case refused > 0:
				return &exitError{code: exitRefused, msg: fmt.Sprintf("%d of %d transactions were refused and are kept; the others landed", refused, len(ids))}
			}
			return nil
		},
	}
	c.Flags().StringVar(&validate, "validate", "", "add a validator: run `CMD` via sh -c on each candidate tree before it lands, after that transaction's validate from .airlock.toml, which always runs")
	c.Flags().BoolVar(&approve, "approve", false, "approve changes to protected paths")
	c.Flags().BoolVar(&asJSON, "json", false, "print {transactions: [{tx, result, error}]} as JSON on stdout instead of the table")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the airlock.* blocks")
	return c
}

func landWord(r *airlock.Result) string {
	if r.Outcome == airlock.NoChanges {
		return "empty"
	}
	return "landed"
}

func newGCCmd(io IO) *cobra.Command {
	var olderThan time.Duration
	var dryRun, asJSON bool
	c := &cobra.Command{
		Use:   "gc [ID...] [--older-than DUR] [--dry-run]",
		Short: "Remove settled transactions' state (named ones also when refused, or open with their owner gone)",
		RunE: func(c *cobra.Command, ids []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			items, freed, err := st.GC(c.Context(), airlock.GCOptions{OlderThan: olderThan, DryRun: dryRun, IDs: ids})
			sort.SliceStable(items, func(a, b int) bool { return items[a].Removed && !items[b].Removed })
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			out := io.Out
			if asJSON {
				out = iopkg.Discard
			}
			var kept, held int64
			entries := []map[string]any{}
			for _, it := range items {
				if it.Removed {
					fmt.Fprintf(out, "%s %s (%s, %s)\n", verb, it.ID, it.Reason, size(it.Bytes))
				} else if slices.Contains(ids, it.ID) || len(ids) == 0 {
					fmt.Fprintf(out, "kept %s (%s; holds %s)\n", it.ID, it.Reason, size(it.Bytes))
					kept++
					held += it.Bytes
				} else {
					continue
				}
				entries = append(entries, map[string]any{"id": it.ID, "status": it.Status, "removed": it.Removed, "reason": it.Reason, "bytes": it.Bytes})
			}
			if asJSON {
				if jerr := writeJSON(io, map[string]any{"dry_run": dryRun, "freed": freed, "transactions": entries}); jerr != nil {
					return jerr
				}
				return err
			}
			fmt.Fprintf(io.Out, "%s %s\n", map[bool]string{true: "would free", false: "freed"}[dryRun], size(freed))
			if kept > 0 {
				// What stays matters as much as what goes: an interrupted
				// transaction can hold far more than gc frees.
				fmt.Fprintf(io.Out, "kept %d transaction%s holding %s\n", kept, map[bool]string{true: "", false: "s"}[kept == 1], size(held))
			}
			return err
		},
	}
	c.Flags().DurationVar(&olderThan, "older-than", 0, "keep transactions settled more recently than `DUR` (e.g. 24h)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be removed; remove nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print {dry_run, freed, transactions: [{id, status, removed, reason, bytes}]} as JSON")
	return c
}
