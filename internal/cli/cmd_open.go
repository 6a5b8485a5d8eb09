package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/jsonout"
)

// openOptions are open's flags.
type openOptions struct {
	tx       txFlags
	json     bool
	validate bool // --validate was given: it belongs to a commit
}

func newOpenCmd(io IO) *cobra.Command {
	var o openOptions
	c := &cobra.Command{
		Use:   "open [flags]",
		Short: "Open a transaction and print its id and staged path",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.validate = c.Flags().Changed("validate")
			return runOpen(c.Context(), io, o)
		},
	}
	o.tx.register(c)
	// A commit's flags, shared by the commands that settle: open refuses
	// them with the command they belong to (runOpen), and does not offer
	// them in its help, its man page or completion.
	for _, name := range []string{"validate", "receipt", "approve"} {
		if c.Flags().Lookup(name) != nil {
			c.Flags().MarkHidden(name)
		}
	}
	// open settles nothing: --quiet only keeps the progress line away.
	c.Flags().BoolVarP(&o.tx.out.quiet, "quiet", "q", false, "draw no progress line while staging")
	c.Flags().BoolVar(&o.json, "json", false, "print one JSON object with id, path, base, backend and port_base")
	return c
}

func runOpen(ctx context.Context, io IO, o openOptions) error {
	f := &o.tx
	if err := f.check(); err != nil {
		return err
	}
	if f.receipt != "" || f.approve {
		return errors.New("--receipt and --approve belong to `airlock commit ID`, not to open")
	}
	if o.validate {
		// Accepted and forgotten, it would read as a gate that is not there.
		return errors.New("--validate belongs to `airlock commit ID` (or run, land, review), not to open: it adds a validator to a commit, after the project's validate from .airlock.toml")
	}
	st, err := store()
	if err != nil {
		return err
	}
	tx, err := st.Open(ctx, f.openOptions(nil))
	if err != nil {
		return err
	}
	for _, w := range tx.Record().Warnings {
		fmt.Fprintf(io.Err, "airlock: warning: %s\n", w)
	}
	if o.json {
		return writeJSON(io, jsonout.NewOpen(tx))
	}
	fmt.Fprintf(io.Out, "%s\n%s\n", tx.ID(), tx.Path())
	return nil
}
