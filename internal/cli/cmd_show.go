package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/jsonout"
)

// showOptions are show's argument and flag.
type showOptions struct {
	id   string
	json bool
}

func newShowCmd(io IO) *cobra.Command {
	var o showOptions
	c := &cobra.Command{
		Use:   "show ID [--json]",
		Short: "Show a transaction: status, base, backend, counts, refusal, events",
		Args:  oneID,
		RunE: func(c *cobra.Command, args []string) error {
			o.id = args[0]
			return runShow(c.Context(), io, o)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	return c
}

func runShow(ctx context.Context, io IO, o showOptions) error {
	tx, err := openTx(o.id)
	if err != nil {
		return err
	}
	in, err := tx.InfoWithDigest(ctx)
	if err != nil {
		return err
	}
	evs, err := tx.Events()
	if err != nil {
		return err
	}
	evs = withReasons(evs)
	rec := tx.Record()
	if o.json {
		return writeJSON(io, jsonout.NewShow(in, rec, evs))
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
	if len(in.Conflicts) > 0 {
		var ps []string
		for _, p := range in.Conflicts {
			ps = append(ps, escapeValue(string(p)))
		}
		fmt.Fprintf(w, "conflicts: %s (resolve the markers, then commit)\n", strings.Join(ps, ","))
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
}
