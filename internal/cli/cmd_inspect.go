package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

func newListCmd(io IO) *cobra.Command {
	var all, asJSON bool
	c := &cobra.Command{
		Use:   "list [--all] [--json]",
		Short: "List transactions (open and retained; --all adds settled ones)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			infos, err := st.List(c.Context(), all)
			if err != nil {
				return err
			}
			if asJSON {
				if infos == nil {
					infos = []*airlock.Info{}
				}
				return writeJSON(io, infos)
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
		},
	}
	c.Flags().BoolVar(&all, "all", false, "include settled transactions")
	c.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of transaction objects")
	return c
}

func newShowCmd(io IO) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID [--json]",
		Short: "Show a transaction: status, base, backend, counts, refusal, events",
		Args:  oneID,
		RunE: func(c *cobra.Command, args []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			tx, err := st.Tx(args[0])
			if err != nil {
				return err
			}
			in, err := tx.InfoWithDigest(c.Context())
			if err != nil {
				return err
			}
			evs, err := tx.Events()
			if err != nil {
				return err
			}
			evs = withReasons(evs)
			rec := tx.Record()
			if asJSON {
				if evs == nil {
					evs = []airlock.Event{}
				}
				return writeJSON(io, struct {
					*airlock.Info
					Exclude  []airlock.Bytes `json:"exclude"`
					Protect  []airlock.Bytes `json:"protect"`
					Command  []airlock.Bytes `json:"command"`
					Warnings []string        `json:"warnings"`
					Events   []airlock.Event `json:"events"`
				}{in, rawPaths(rec.Exclude), rawPaths(rec.Protect), append([]airlock.Bytes{}, rec.Command...), nonNil(rec.Warnings), evs})
			}
			w := io.Out
			fmt.Fprintf(w, "id:        %s\n", in.ID)
			fmt.Fprintf(w, "status:    %s\n", in.Status)
			fmt.Fprintf(w, "base:      %s\n", escapeValue(in.Base))
			fmt.Fprintf(w, "backend:   %s\n", in.Backend)
			fmt.Fprintf(w, "staged:    %s (%s)\n", escapeValue(in.Path), size(in.StagedBytes))
			if r := in.Recycled; r != nil {
				fmt.Fprintf(w, "recycled:  the tree of %s, refreshed: %d entries kept, %d copied (%s), %d removed\n", r.From, r.Kept, r.Copied, size(r.Bytes), r.Removed)
			} else if in.NotRecycled != "" {
				fmt.Fprintf(w, "recycled:  no, copied afresh: %s\n", in.NotRecycled)
			}
			fmt.Fprintf(w, "created:   %s (%s ago)\n", in.CreatedAt.Format(time.RFC3339), age(in.CreatedAt))
			fmt.Fprintf(w, "owner:     pid %d, %s\n", in.PID, map[bool]string{true: "alive", false: "gone"}[in.OwnerAlive])
			fmt.Fprintf(w, "ports:     %d-%d\n", in.PortBase, in.PortBase+9)
			if len(rec.Command) > 0 {
				fmt.Fprintf(w, "command:   %s\n", strings.Join(command(rec), " "))
			}
			fmt.Fprintf(w, "changes:   +%d ~%d -%d", in.Added, in.Modified, in.Deleted)
			if in.GitMeta > 0 {
				fmt.Fprintf(w, " (and %d paths under .git, never applied)", in.GitMeta)
			}
			fmt.Fprintln(w)
			if in.DiffDigest != "" {
				fmt.Fprintf(w, "digest:    %s\n", in.DiffDigest)
			}
			fmt.Fprintf(w, "excluded:  %s\n", strings.Join(rec.Exclude, " "))
			fmt.Fprintf(w, "protected: %s\n", strings.Join(rec.Protect, " "))
			if in.Refusal != "" {
				var ps []string
				for _, p := range in.RefusedPaths {
					ps = append(ps, escapeValue(string(p)))
				}
				fmt.Fprintf(w, "refusal:   %s %s\n", in.Refusal, strings.Join(ps, ","))
			}
			if in.Receipt != "" {
				fmt.Fprintf(w, "receipt:   %s\n", escapeValue(in.Receipt))
			}
			if in.Branch != "" {
				fmt.Fprintf(w, "branch:    %s\n", branchLine(in))
			}
			for _, wn := range rec.Warnings {
				fmt.Fprintf(w, "warning:   %s\n", wn)
			}
			fmt.Fprintln(w, "events:")
			for _, e := range evs {
				fmt.Fprintf(w, "  %s  %s", e.Time.Format(time.RFC3339Nano), e.Event)
				for _, k := range sortedKeys(e.Detail) {
					fmt.Fprintf(w, " %s=%v", k, e.Detail[k])
				}
				fmt.Fprintln(w)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

func command(rec airlock.Record) []string {
	out := []string{}
	for _, a := range rec.Command {
		out = append(out, string(a))
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func age(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
