package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

// discardOptions are discard's argument and flags.
type discardOptions struct {
	id                string
	dropCommits, json bool
	out               output
}

func newDiscardCmd(io IO) *cobra.Command {
	var o discardOptions
	c := &cobra.Command{
		Use:   "discard ID",
		Short: "Drop a transaction's changes; the base is not touched",
		Args:  oneID,
		RunE: func(c *cobra.Command, args []string) error {
			o.id = args[0]
			return runDiscard(c.Context(), io, o)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the result and receipt as JSON on stdout (as commit --json)")
	o.out.register(c)
	c.Flags().BoolVar(&o.dropCommits, "drop-commits", false, "let git commits the command made in the staged workspace go too (by default they are kept on branch airlock/ID in the base's repository)")
	return c
}

func runDiscard(ctx context.Context, io IO, o discardOptions) error {
	return settle(ctx, io, o.id, o.out, o.json, func(ctx context.Context, tx *airlock.Tx) (*airlock.Result, error) {
		return tx.Discard(ctx, airlock.DiscardOptions{DropCommits: o.dropCommits})
	})
}
