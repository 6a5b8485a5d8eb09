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
	paths           []string // after --: a partial commit
	approve         bool
	validate        string
	receipt, expect string
	json            bool
	out             output
}

func newCommitCmd(io IO) *cobra.Command {
	var o commitOptions
	c := &cobra.Command{
		Use:   "commit ID [-- PATH...]",
		Short: "Apply a transaction's change set to its base, all or nothing",
		Long: `Apply a transaction's change set to its base, all or nothing.

With -- PATH..., only the changes under those paths land (a partial
commit), through the same checks; the rest stays in the open transaction.
A PATH is relative to the base and names everything beneath it. A PATH
that is a changed path (or a directory above one) byte for byte selects
exactly it; any other is a gitignore selector: wildcards (*, ?, [...],
**) match as at the base's root, and a leading ! takes back what an
earlier PATH selected.`,
		Args: commitArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkValidate(c); err != nil {
				return err
			}
			o.id, o.paths = args[0], args[1:]
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
		return tx.Commit(ctx, airlock.CommitOptions{Approve: o.approve, ReceiptCopy: rpath, Validate: o.validate, ExpectDiffDigest: o.expect, Paths: o.paths})
	})
}

// commitArgs takes the transaction ID, then the paths of a partial commit
// after --: a second word before -- is a mistake, not a path.
func commitArgs(c *cobra.Command, args []string) error {
	dash := c.ArgsLenAtDash()
	switch {
	case dash == 0:
		return fmt.Errorf("commit needs the transaction ID before --: airlock commit ID -- PATH...")
	case dash < 0 && len(args) > 1:
		return fmt.Errorf("commit takes one transaction ID, not %d; to commit only some paths, put them after --: airlock commit %s -- %s", len(args), args[0], strings.Join(args[1:], " "))
	case dash < 0:
		return oneID(c, args)
	case dash > 1:
		return fmt.Errorf("commit takes one transaction ID, not %d; the paths of a partial commit follow --: airlock commit %s -- %s", dash, args[0], strings.Join(args[1:], " "))
	case len(args) == 1:
		return fmt.Errorf("commit %s --: name the paths to commit after --, or leave -- out to commit everything", args[0])
	}
	return nil
}
