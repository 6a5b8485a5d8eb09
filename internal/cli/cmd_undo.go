package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

// undoOptions are undo's argument and flags.
type undoOptions struct {
	id               string // "": the newest commit
	workdir, receipt string
	approve, json    bool
	out              output
}

func newUndoCmd(io IO) *cobra.Command {
	var o undoOptions
	c := &cobra.Command{
		Use:   "undo [ID] [--workdir DIR]",
		Short: "Revert a committed transaction (default: the newest) as a new transaction",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.id = args[0]
			}
			return runUndo(c.Context(), io, o)
		},
	}
	c.Flags().StringVar(&o.workdir, "workdir", "", "the base directory (default: the current directory)")
	c.Flags().BoolVar(&o.approve, "approve", false, "approve restoring protected paths")
	c.Flags().StringVar(&o.receipt, "receipt", "", "also write the receipt JSON to `FILE`")
	c.Flags().BoolVar(&o.json, "json", false, "print the undo transaction's result and receipt as JSON on stdout (as commit --json)")
	o.out.register(c)
	return c
}

func runUndo(ctx context.Context, io IO, o undoOptions) error {
	st, err := store()
	if err != nil {
		return err
	}
	rpath, err := receiptPath(o.receipt)
	if err != nil {
		return err
	}
	uo := airlock.UndoOptions{ID: o.id, Base: o.workdir, CommitOptions: airlock.CommitOptions{Approve: o.approve, ReceiptCopy: rpath}}
	res, err := st.Undo(context.WithoutCancel(ctx), uo)
	if res != nil {
		err = report(ctx, io, o.out, res, "", err)
	}
	if res != nil && o.json {
		if jerr := writeJSON(io, resultJSON(res)); jerr != nil {
			return jerr
		}
	}
	return err
}
