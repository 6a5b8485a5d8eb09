package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

// commitOptions are commit's argument and flags.
type commitOptions struct {
	id              string
	approve         bool
	validate        string
	receipt, expect string
	json            bool
	out             output
}

func newCommitCmd(io IO) *cobra.Command {
	var o commitOptions
	c := &cobra.Command{
		Use:   "commit ID",
		Short: "Apply a transaction's change set to its base, all or nothing",
		Args:  oneID,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkValidate(c); err != nil {
				return err
			}
			o.id = args[0]
			return runCommit(c.Context(), io, o)
		},
	}
	c.Flags().BoolVar(&o.approve, "approve", false, "approve changes to protected paths")
	c.Flags().StringVar(&o.validate, "validate", "", validateHelp)
	c.Flags().StringVar(&o.receipt, "receipt", "", "also write the receipt JSON to `FILE`")
	c.Flags().StringVar(&o.expect, "expect-digest", "", "commit only the change set you reviewed: `DIGEST` is its diff_digest, as airlock show ID --json prints it; refused ReviewStale if it changed since")
	c.Flags().BoolVar(&o.json, "json", false, "print the result and receipt as JSON on stdout")
	o.out.register(c)
	return c
}

func runCommit(ctx context.Context, io IO, o commitOptions) error {
	rpath, err := receiptPath(o.receipt)
	if err != nil {
		return err
	}
	if o.expect != "" && !strings.HasPrefix(o.expect, "sha256:") {
		return fmt.Errorf("--expect-digest %q: want the change set's diff_digest as `airlock show ID --json` prints it (sha256:...)", o.expect)
	}
	return settle(ctx, io, o.id, o.out, o.json, func(ctx context.Context, tx *airlock.Tx) (*airlock.Result, error) {
		return tx.Commit(ctx, airlock.CommitOptions{Approve: o.approve, ReceiptCopy: rpath, Validate: o.validate, ExpectDiffDigest: o.expect})
	})
}
