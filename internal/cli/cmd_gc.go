package cli

import (
	"context"
	"fmt"
	iopkg "io"
	"slices"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// gcOptions are gc's arguments and flags.
type gcOptions struct {
	ids                    []string
	olderThan              time.Duration
	dryRun, dropPool, json bool
}

func newGCCmd(io IO) *cobra.Command {
	var o gcOptions
	c := &cobra.Command{
		Use:   "gc [ID...] [--older-than DUR] [--dry-run] [--drop-pool]",
		Short: "Remove settled transactions' state (named ones also when refused, or open with their owner gone)",
		RunE: func(c *cobra.Command, ids []string) error {
			o.ids = ids
			return runGC(c.Context(), io, o)
		},
	}
	c.Flags().DurationVar(&o.olderThan, "older-than", 0, "keep transactions settled more recently than `DUR` (e.g. 24h)")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "report what would be removed; remove nothing")
	c.Flags().BoolVar(&o.dropPool, "drop-pool", false, "also remove every pooled staged tree (kept for recycling; without this flag gc keeps the newest two per base that are younger than --older-than, or 7 days)")
	c.Flags().BoolVar(&o.json, "json", false, "print {dry_run, freed, transactions: [{id, status, removed, reason, bytes}], pooled_trees: [{tx, removed, reason, bytes}]} as JSON")
	return c
}

func runGC(ctx context.Context, io IO, o gcOptions) error {
	st, err := store()
	if err != nil {
		return err
	}
	items, freed, err := st.GC(ctx, airlock.GCOptions{OlderThan: o.olderThan, DryRun: o.dryRun, IDs: o.ids, DropPool: o.dropPool})
	sort.SliceStable(items, func(a, b int) bool { return items[a].Removed && !items[b].Removed })
	verb := "removed"
	if o.dryRun {
		verb = "would remove"
	}
	out := io.Out
	if o.json {
		out = iopkg.Discard
	}
	var kept, held, pooled, poolBytes int64
	entries, pool := []jsonout.GCItem{}, []jsonout.PooledTree{}
	for _, it := range items {
		if it.Pooled {
			if it.Removed {
				fmt.Fprintf(out, "%s the pooled tree of %s (%s, %s)\n", verb, it.ID, it.Reason, size(it.Bytes))
			} else {
				pooled++
				poolBytes += it.Bytes
			}
			pool = append(pool, jsonout.PooledTree{Bytes: it.Bytes, Reason: it.Reason, Removed: it.Removed, Tx: it.ID})
			continue
		}
		if it.Removed {
			fmt.Fprintf(out, "%s %s (%s, %s)\n", verb, it.ID, it.Reason, size(it.Bytes))
		} else if slices.Contains(o.ids, it.ID) || len(o.ids) == 0 {
			fmt.Fprintf(out, "kept %s (%s; holds %s)\n", it.ID, it.Reason, size(it.Bytes))
			kept++
			held += it.Bytes
		} else {
			continue
		}
		entries = append(entries, jsonout.GCItem{Bytes: it.Bytes, ID: it.ID, Reason: it.Reason, Removed: it.Removed, Status: it.Status})
	}
	if o.json {
		if jerr := writeJSON(io, jsonout.GC{DryRun: o.dryRun, Freed: freed, PooledTrees: pool, Transactions: entries}); jerr != nil {
			return jerr
		}
		return err
	}
	fmt.Fprintf(io.Out, "%s %s\n", map[bool]string{true: "would free", false: "freed"}[o.dryRun], size(freed))
	if kept > 0 {
		// What stays matters as much as what goes: an interrupted
		// transaction can hold far more than gc frees.
		fmt.Fprintf(io.Out, "kept %d transaction%s holding %s\n", kept, map[bool]string{true: "", false: "s"}[kept == 1], size(held))
	}
	if pooled > 0 {
		fmt.Fprintf(io.Out, "kept %d pooled staged tree%s holding %s, for the next open over their bases to recycle (--drop-pool removes them)\n", pooled, map[bool]string{true: "", false: "s"}[pooled == 1], size(poolBytes))
	}
	return err
}
