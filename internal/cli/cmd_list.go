package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

// listOptions are list's flags.
type listOptions struct {
	all, json bool
}

func newListCmd(io IO) *cobra.Command {
	var o listOptions
	c := &cobra.Command{
		Use:   "list [--all] [--json]",
		Short: "List transactions (open and retained; --all adds settled ones)",
		Long: `List transactions (open and retained; --all adds settled ones).

With nothing to list, it says so, names the state directory it looked in,
and says how to start a transaction (or, where only settled ones are
kept, how many, and that --all lists them); --json prints [].`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runList(c.Context(), io, o)
		},
	}
	c.Flags().BoolVar(&o.all, "all", false, "include settled transactions")
	c.Flags().BoolVar(&o.json, "json", false, "print a JSON array of transaction objects")
	return c
}

func runList(ctx context.Context, io IO, o listOptions) error {
	st, err := store()
	if err != nil {
		return err
	}
	infos, err := st.List(ctx, o.all)
	if err != nil {
		return err
	}
	if o.json {
		if infos == nil {
			infos = []*airlock.Info{}
		}
		return writeJSON(io, infos)
	}
	if len(infos) == 0 {
		return listNothing(ctx, io, st, o.all)
	}
	tw := tabwriter.NewWriter(io.Out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tAGE\tBACKEND\tOWNER\tSTAGED\tCHANGES\tBASE")
	for _, in := range infos {
		if in.Status == airlock.StatusCorrupt {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t%s\n", in.ID, in.Status, in.Error)
			continue
		}
		owner := "gone"
		if in.OwnerAlive {
			owner = fmt.Sprintf("alive (%d)", in.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t+%d ~%d -%d\t%s\n", in.ID, in.Status,
			age(in.CreatedAt), in.Backend, owner, size(in.StagedBytes), in.Added, in.Modified, in.Deleted, escapeValue(in.Base))
	}
	return tw.Flush()
}

// listNothing says that nothing is listed, where it looked, and what to
// do, rather than print a header over no rows.
func listNothing(ctx context.Context, io IO, st *airlock.Store, all bool) error {
	if all {
		fmt.Fprintf(io.Out, "no transactions in %s: `airlock run -- CMD` or `airlock open` starts one\n", st.Dir())
		return nil
	}
	settled, err := st.List(ctx, true)
	if err != nil {
		return err
	}
	if len(settled) == 0 {
		fmt.Fprintf(io.Out, "no transactions in %s: `airlock run -- CMD` or `airlock open` starts one\n", st.Dir())
		return nil
	}
	fmt.Fprintf(io.Out, "nothing open or kept in %s; %d settled (`airlock list --all` lists them)\n", st.Dir(), len(settled))
	return nil
}
