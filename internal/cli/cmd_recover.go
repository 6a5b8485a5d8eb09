package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// recoverOptions are recover's flags.
type recoverOptions struct {
	workdir string
	json    bool
	out     output
	recover airlock.RecoverOptions // --moved, --base-gone
}

func newRecoverCmd(io IO) *cobra.Command {
	var o recoverOptions
	c := &cobra.Command{
		Use:   "recover [--workdir DIR] [--moved | --base-gone]",
		Short: "Resolve an apply that was interrupted (crash, kill, power loss)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runRecover(c.Context(), io, o)
		},
	}
	c.Flags().StringVar(&o.workdir, "workdir", "", "the base directory (default: the current directory)")
	c.Flags().BoolVar(&o.json, "json", false, "print what recover found and did as JSON on stdout")
	o.out.register(c)
	c.Flags().BoolVar(&o.recover.Moved, "moved", false, "confirm that DIR is the interrupted transaction's base: moved here since it opened, or its disk back under another device number")
	c.Flags().BoolVar(&o.recover.BaseGone, "base-gone", false, "confirm that the base at DIR was deleted for good: clear its interrupted apply (its journal is kept)")
	c.MarkFlagsMutuallyExclusive("moved", "base-gone")
	return c
}

func runRecover(ctx context.Context, io IO, o recoverOptions) error {
	st, err := store()
	if err != nil {
		return err
	}
	rr, err := st.RecoverWith(context.WithoutCancel(ctx), o.workdir, o.recover)
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
	if rr.Result != nil {
		report(ctx, io, o.out, rr.Result, "", nil)
	}
	if o.json {
		return writeJSON(io, jsonout.NewRecover(rr, commandline.Explain))
	}
	return nil
}
