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
	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// gcOptions are gc's arguments and flags.
type gcOptions struct {
	ids                    []string
	olderThan              *time.Duration // nil: each base's grace
	dryRun, dropPool, json bool
}

// durationFlag is --older-than: a span in days ("7d") or Go's form
// ("36h", "0"), as gc_keep takes it, remembering whether it was given,
// since --older-than 0 (remove whatever may go now) is not its absence
// (each base's grace).
type durationFlag struct{ d **time.Duration }

func (f durationFlag) String() string {
	if *f.d == nil {
		return ""
	}
	return (**f.d).String()
}

func (f durationFlag) Set(s string) error {
	d, err := config.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = &d
	return nil
}

func (f durationFlag) Type() string { return "duration" }

func newGCCmd(io IO) *cobra.Command {
	var o gcOptions
	c := &cobra.Command{
		Use:   "gc [ID...] [--older-than DUR] [--dry-run] [--drop-pool]",
		Short: "Remove settled transactions' state once their grace has passed (named ones at once, also when refused, or open with their owner gone)",
		Long: `Remove settled transactions' state once their grace has passed (named ones at once, also when refused, or open with their owner gone).

A plain gc keeps a settled transaction for its base's grace, counted from
when it settled: gc_keep in the .airlock.toml that governs the base, else 7
days. A committed transaction's state is what undo needs, so the grace is
the time a person has to change their mind; its receipt stays in the base's
chain (log, receipt verify) either way. --older-than DUR replaces every
base's grace for this run (--older-than 0: whatever may go now). A
transaction named by ID is removed whatever its age, unless --older-than is
given too. gc says which commits lose their undo (--dry-run: would lose).`,
		RunE: func(c *cobra.Command, ids []string) error {
			o.ids = ids
			return runGC(c.Context(), io, o)
		},
	}
	c.Flags().Var(durationFlag{&o.olderThan}, "older-than", "keep transactions settled more recently than `DUR` (\"14d\", \"24h\", \"0\"), instead of each base's grace (gc_keep, else 7 days)")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "report what would be removed; remove nothing")
	c.Flags().BoolVar(&o.dropPool, "drop-pool", false, "also remove every pooled staged tree (kept for recycling; without this flag gc keeps the newest two per base that are younger than --older-than, or 7 days)")
	c.Flags().BoolVar(&o.json, "json", false, "print {dry_run, freed, transactions: [{id, status, removed, undo_lost, grace_ends, reason, bytes}], pooled_trees: [{tx, removed, reason, bytes}]} as JSON")
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
	var kept, held, pooled, poolBytes, graced, gracedBytes int64
	var firstEnds time.Time
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
		var ends *time.Time
		if !it.GraceEnds.IsZero() {
			ends = &it.GraceEnds
		}
		switch {
		case it.Removed && it.UndoLost && o.dryRun:
			fmt.Fprintf(out, "%s %s (%s, %s); its undo would be lost (its receipt stays in the base's log)\n", verb, it.ID, it.Reason, size(it.Bytes))
		case it.Removed && it.UndoLost:
			fmt.Fprintf(out, "%s %s (%s, %s); it can no longer be undone (its receipt stays in the base's log)\n", verb, it.ID, it.Reason, size(it.Bytes))
		case it.Removed:
			fmt.Fprintf(out, "%s %s (%s, %s)\n", verb, it.ID, it.Reason, size(it.Bytes))
		case ends != nil && len(o.ids) == 0:
			// Kept for its grace: routine, so counted, not listed (the
			// JSON lists each, with when its grace ends).
			graced++
			gracedBytes += it.Bytes
			if firstEnds.IsZero() || ends.Before(firstEnds) {
				firstEnds = *ends
			}
		case slices.Contains(o.ids, it.ID) || len(o.ids) == 0:
			fmt.Fprintf(out, "kept %s (%s; holds %s)\n", it.ID, it.Reason, size(it.Bytes))
			kept++
			held += it.Bytes
		default:
			continue
		}
		entries = append(entries, jsonout.GCItem{Bytes: it.Bytes, GraceEnds: ends, ID: it.ID, Reason: it.Reason, Removed: it.Removed, Status: it.Status, UndoLost: it.UndoLost})
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
	if graced > 0 {
		fmt.Fprintf(io.Out, "kept %d settled transaction%s holding %s for their grace (gc_keep, else 7 days): their undo and their receipts stay; the first grace ends %s (--older-than DUR or naming one removes sooner)\n", graced, map[bool]string{true: "", false: "s"}[graced == 1], size(gracedBytes), firstEnds.Local().Format("2006-01-02 15:04"))
	}
	if pooled > 0 {
		fmt.Fprintf(io.Out, "kept %d pooled staged tree%s holding %s, for the next open over their bases to recycle (--drop-pool removes them)\n", pooled, map[bool]string{true: "", false: "s"}[pooled == 1], size(poolBytes))
	}
	return err
}
