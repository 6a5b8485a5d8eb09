package cli

import (
	"context"
	"errors"
	"fmt"
	iopkg "io"
	"slices"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/landing"
)

func newLogCmd(io IO) *cobra.Command {
	var workdir, remote, branch string
	var asJSON bool
	c := &cobra.Command{
		Use:   "log [--workdir DIR] [--remote REMOTE --branch BRANCH] [--json]",
		Short: "The transactions committed to this base (or landed into a remote branch), newest first",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if (remote == "") != (branch == "") {
				return errors.New("--remote and --branch go together: name the remote and the branch whose landings to list")
			}
			st, err := store()
			if err != nil {
				return err
			}
			if remote != "" {
				return remoteLog(c.Context(), io, st, airlock.RemoteLogOptions{Dir: workdir, Remote: remote, Branch: branch}, asJSON)
			}
			lg, err := st.Log(workdir)
			if err != nil {
				return err
			}
			if asJSON {
				entries := lg.Entries
				if entries == nil {
					entries = []*airlock.Receipt{}
				}
				if err := writeJSON(io, map[string]any{"base": lg.Base, "entries": entries, "broken": lg.Broken}); err != nil {
					return err
				}
			} else {
				for _, r := range lg.Entries {
					fmt.Fprintf(io.Out, "%s  %s  +%d ~%d -%d  %s\n", r.EndedAt.Local().Format("2006-01-02 15:04:05"), r.TxID, r.Added, r.Modified, r.Deleted, r.Digest)
				}
			}
			// A broken chain fails with --json too, so that a script that
			// checks only the exit code cannot take a tampered history as sound.
			if lg.Broken != "" {
				return fmt.Errorf("the receipt chain of %s is broken: %s", lg.Base, lg.Broken)
			}
			return nil
		},
	}
	c.Flags().StringVar(&workdir, "workdir", "", "the base directory (default: the current directory); with --remote, the repository whose remotes REMOTE may name")
	c.Flags().BoolVar(&asJSON, "json", false, "print the chain as JSON")
	c.Flags().StringVar(&remote, "remote", "", "list what was landed into a git remote: a remote name or a URL (with --branch)")
	c.Flags().StringVar(&branch, "branch", "", "the remote branch whose landings to list (with --remote)")
	return c
}

// remoteLog lists a remote branch's landings, verified from its notes; a
// broken chain fails, with --json too.
func remoteLog(ctx context.Context, io IO, st *airlock.Store, o airlock.RemoteLogOptions, asJSON bool) error {
	lg, err := st.RemoteLog(ctx, o)
	if err != nil {
		return err
	}
	if asJSON {
		type entry struct {
			Commit  string           `json:"commit"`
			Receipt *airlock.Receipt `json:"receipt"`
		}
		entries := []entry{}
		for _, e := range lg.Entries {
			entries = append(entries, entry{e.Commit, e.Receipt})
		}
		if err := writeJSON(io, map[string]any{"remote": lg.Remote, "branch": lg.Branch, "head": lg.Head, "entries": entries, "broken": lg.Broken}); err != nil {
			return err
		}
	} else {
		for _, e := range lg.Entries {
			r := e.Receipt
			fmt.Fprintf(io.Out, "%s  %s  %s  +%d ~%d -%d  %s\n", r.EndedAt.Local().Format("2006-01-02 15:04:05"), r.TxID, e.Commit, r.Added, r.Modified, r.Deleted, r.Digest)
		}
	}
	if lg.Broken != "" {
		return fmt.Errorf("the receipt chain of %s on %s is broken: %s", lg.Branch, lg.Remote, lg.Broken)
	}
	return nil
}

func newUndoCmd(io IO) *cobra.Command {
	var workdir, receipt string
	var approve, quiet, asJSON bool
	c := &cobra.Command{
		Use:   "undo [ID] [--workdir DIR]",
		Short: "Revert a committed transaction (default: the newest) as a new transaction",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			rpath, err := receiptPath(receipt)
			if err != nil {
				return err
			}
			o := airlock.UndoOptions{Base: workdir, CommitOptions: airlock.CommitOptions{Approve: approve, ReceiptCopy: rpath}}
			if len(args) == 1 {
				o.ID = args[0]
			}
			res, err := st.Undo(context.WithoutCancel(c.Context()), o)
			if res != nil && !quiet {
				writeBlock(io.Err, res)
			}
			if res != nil && asJSON {
				if jerr := writeJSON(io, resultJSON(res)); jerr != nil {
					return jerr
				}
			}
			return err
		},
	}
	c.Flags().StringVar(&workdir, "workdir", "", "the base directory (default: the current directory)")
	c.Flags().BoolVar(&approve, "approve", false, "approve restoring protected paths")
	c.Flags().StringVar(&receipt, "receipt", "", "also write the receipt JSON to `FILE`")
	c.Flags().BoolVar(&asJSON, "json", false, "print the undo transaction's result and receipt as JSON on stdout (as commit --json)")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the airlock.* block")
	return c
}

func newLandCmd(io IO) *cobra.Command {
	var validate, remote, branch string
	var approve, quiet, asJSON bool
	var retries int
	c := &cobra.Command{
		Use:   "land ID... [--validate CMD] [--remote REMOTE --branch BRANCH]",
		Short: "Integrate several transactions in order, each validated on its exact candidate",
		Long: `Integrate several transactions in order, each validated on its exact candidate.

Without --remote, each is committed to its base against the result of the
ones before it. With --remote and --branch, each lands into that branch of
a git remote instead, never touching the base's files: airlock fetches the
branch head, builds the candidate commit (the head plus the change set,
three-way merged where the head changed a path since the transaction
opened), validates that exact tree in a throw-away checkout, and pushes it
atomically with its receipt (a note in refs/notes/airlock), expecting the
heads it fetched; when another host pushed first, it starts over, up to
--retries times, then refuses RemoteMoved. A transaction already on the
branch (its commit carries the trailer Airlock-Tx: ID) is reported, not
pushed again.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, ids []string) error {
			if err := checkValidate(c); err != nil {
				return err
			}
			if (remote == "") != (branch == "") {
				return errors.New("--remote and --branch go together: name the remote and the branch to land into")
			}
			if c.Flags().Changed("retries") && remote == "" {
				return errors.New("--retries belongs to a landing into a remote (--remote REMOTE --branch BRANCH)")
			}
			if retries < 0 {
				return fmt.Errorf("--retries %d: give 0 or more", retries)
			}
			st, err := store()
			if err != nil {
				return err
			}
			if remote != "" {
				return landRemote(c.Context(), io, st, ids, airlock.RemoteOptions{Remote: remote, Branch: branch, Attempts: retries + 1,
					CommitOptions: airlock.CommitOptions{Validate: validate, Approve: approve}}, quiet, asJSON)
			}
			var results []airlock.RemoteLanded
			for _, l := range st.Land(context.WithoutCancel(c.Context()), ids, airlock.CommitOptions{Validate: validate, Approve: approve}) {
				results = append(results, airlock.RemoteLanded{ID: l.ID, Result: l.Result, Err: l.Err})
			}
			refused, failed, err := reportLandings(io, results, quiet, asJSON, nil)
			if err != nil {
				return err
			}
			if err := interrupted(results); err != nil {
				return err
			}
			switch {
			case failed > 0:
				return fmt.Errorf("%d of %d transactions could not be landed", failed, len(ids))
			case refused > 0:
				return &exitError{code: exitRefused, msg: fmt.Sprintf("%d of %d transactions were refused and are kept; the others landed", refused, len(ids))}
			}
			return nil
		},
	}
	c.Flags().StringVar(&validate, "validate", "", "add a validator: run `CMD` via sh -c on each candidate tree before it lands, after that transaction's validate from .airlock.toml, which always runs")
	c.Flags().BoolVar(&approve, "approve", false, "approve changes to protected paths")
	c.Flags().BoolVar(&asJSON, "json", false, "print {transactions: [{tx, result, error}]} as JSON on stdout instead of the table")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "do not print the airlock.* blocks")
	c.Flags().StringVar(&remote, "remote", "", "land into a git remote: a remote of the base's repository or a URL (with --branch)")
	c.Flags().StringVar(&branch, "branch", "", "the remote branch to land into (with --remote)")
	c.Flags().IntVar(&retries, "retries", airlock.DefaultRemoteAttempts-1, "with --remote: how many times to fetch, merge, validate and push again when another host pushed first")
	return c
}

// landRemote prints one line per transaction: landed (with the commit),
// already (on the branch before: nothing pushed), refused or failed.
func landRemote(ctx context.Context, io IO, st *airlock.Store, ids []string, o airlock.RemoteOptions, quiet, asJSON bool) error {
	results := st.LandRemote(context.WithoutCancel(ctx), ids, o)
	refused, failed, err := reportLandings(io, results, quiet, asJSON, map[string]any{"remote": landing.Redact(o.Remote), "branch": o.Branch})
	if err != nil {
		return err
	}
	if err := interrupted(results); err != nil {
		return err
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d of %d transactions could not be landed into branch %s (see above)", failed, len(ids), o.Branch)
	case refused > 0:
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%d of %d transactions were refused and are kept; the others landed", refused, len(ids))}
	}
	return nil
}

// interrupted is the error of a land that a signal stopped (exit 128+N),
// nil for one that ran to its end: the transactions after the
// interrupted one were not tried.
func interrupted(results []airlock.RemoteLanded) error {
	if n := len(results); n > 0 {
		var irq *airlock.InterruptedError
		if errors.As(results[n-1].Err, &irq) {
			return &exitError{code: 128 + int(irq.Signal), msg: fmt.Sprintf("land stopped: %v; the transactions after it were not tried", results[n-1].Err)}
		}
	}
	return nil
}

// reportLandings prints what a land did: the settle blocks on stderr, and
// a line per transaction on stdout, or with asJSON one object (top's
// members, and transactions). A landing into a remote has a commit.
func reportLandings(io IO, results []airlock.RemoteLanded, quiet, asJSON bool, top map[string]any) (refused, failed int, err error) {
	for _, l := range results {
		if l.Result != nil && !quiet {
			writeBlock(io.Err, l.Result)
		}
	}
	out := io.Out
	if asJSON {
		// The table's lines say nothing the JSON does not.
		out = iopkg.Discard
	}
	entries := []map[string]any{}
	for _, l := range results {
		e := map[string]any{"tx": l.ID}
		if l.Result != nil {
			e["result"] = resultJSON(l.Result)
		}
		if l.Commit != "" {
			e["commit"] = l.Commit
		}
		if l.Attempts > 0 {
			e["attempts"] = l.Attempts
		}
		if l.Already {
			e["already"] = true
		}
		var r *airlock.Refusal
		var irq *airlock.InterruptedError
		switch {
		case errors.As(l.Err, &r):
			refused++
			fmt.Fprintf(out, "refused  %s  %s\n", l.ID, r.Error())
		case errors.As(l.Err, &irq):
			// Not a failure: the caller's signal (see interrupted).
			fmt.Fprintf(out, "stopped  %s  %v\n", l.ID, l.Err)
			e["error"] = l.Err.Error()
		case l.Err != nil:
			failed++
			fmt.Fprintf(out, "failed   %s  %v\n", l.ID, l.Err)
			e["error"] = l.Err.Error()
		case l.Already:
			fmt.Fprintf(out, "already  %s  %s\n", l.ID, l.Commit)
		case l.Commit != "" && l.Result.Outcome != airlock.NoChanges:
			fmt.Fprintf(out, "landed   %s  %s  +%d ~%d -%d  attempts=%d\n", l.ID, l.Commit, l.Result.Added, l.Result.Modified, l.Result.Deleted, l.Attempts)
		default:
			fmt.Fprintf(out, "%-8s %s  +%d ~%d -%d\n", landWord(l.Result), l.ID, l.Result.Added, l.Result.Modified, l.Result.Deleted)
		}
		entries = append(entries, e)
	}
	if asJSON {
		doc := map[string]any{"transactions": entries}
		for k, v := range top {
			doc[k] = v
		}
		if err := writeJSON(io, doc); err != nil {
			return refused, failed, err
		}
	}
	return refused, failed, nil
}

func landWord(r *airlock.Result) string {
	if r.Outcome == airlock.NoChanges {
		return "empty"
	}
	return "landed"
}

func newGCCmd(io IO) *cobra.Command {
	var olderThan time.Duration
	var dryRun, dropPool, asJSON bool
	c := &cobra.Command{
		Use:   "gc [ID...] [--older-than DUR] [--dry-run] [--drop-pool]",
		Short: "Remove settled transactions' state (named ones also when refused, or open with their owner gone)",
		RunE: func(c *cobra.Command, ids []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			items, freed, err := st.GC(c.Context(), airlock.GCOptions{OlderThan: olderThan, DryRun: dryRun, IDs: ids, DropPool: dropPool})
			sort.SliceStable(items, func(a, b int) bool { return items[a].Removed && !items[b].Removed })
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			out := io.Out
			if asJSON {
				out = iopkg.Discard
			}
			var kept, held, pooled, poolBytes int64
			entries, pool := []map[string]any{}, []map[string]any{}
			for _, it := range items {
				if it.Pooled {
					if it.Removed {
						fmt.Fprintf(out, "%s the pooled tree of %s (%s, %s)\n", verb, it.ID, it.Reason, size(it.Bytes))
					} else {
						pooled++
						poolBytes += it.Bytes
					}
					pool = append(pool, map[string]any{"tx": it.ID, "removed": it.Removed, "reason": it.Reason, "bytes": it.Bytes})
					continue
				}
				if it.Removed {
					fmt.Fprintf(out, "%s %s (%s, %s)\n", verb, it.ID, it.Reason, size(it.Bytes))
				} else if slices.Contains(ids, it.ID) || len(ids) == 0 {
					fmt.Fprintf(out, "kept %s (%s; holds %s)\n", it.ID, it.Reason, size(it.Bytes))
					kept++
					held += it.Bytes
				} else {
					continue
				}
				entries = append(entries, map[string]any{"id": it.ID, "status": it.Status, "removed": it.Removed, "reason": it.Reason, "bytes": it.Bytes})
			}
			if asJSON {
				if jerr := writeJSON(io, map[string]any{"dry_run": dryRun, "freed": freed, "transactions": entries, "pooled_trees": pool}); jerr != nil {
					return jerr
				}
				return err
			}
			fmt.Fprintf(io.Out, "%s %s\n", map[bool]string{true: "would free", false: "freed"}[dryRun], size(freed))
			if kept > 0 {
				// What stays matters as much as what goes: an interrupted
				// transaction can hold far more than gc frees.
				fmt.Fprintf(io.Out, "kept %d transaction%s holding %s\n", kept, map[bool]string{true: "", false: "s"}[kept == 1], size(held))
			}
			if pooled > 0 {
				fmt.Fprintf(io.Out, "kept %d pooled staged tree%s holding %s, for the next open over their bases to recycle (--drop-pool removes them)\n", pooled, map[bool]string{true: "", false: "s"}[pooled == 1], size(poolBytes))
			}
			return err
		},
	}
	c.Flags().DurationVar(&olderThan, "older-than", 0, "keep transactions settled more recently than `DUR` (e.g. 24h)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be removed; remove nothing")
	c.Flags().BoolVar(&dropPool, "drop-pool", false, "also remove every pooled staged tree (kept for recycling; without this flag gc keeps the newest two per base that are younger than --older-than, or 7 days)")
	c.Flags().BoolVar(&asJSON, "json", false, "print {dry_run, freed, transactions: [{id, status, removed, reason, bytes}], pooled_trees: [{tx, removed, reason, bytes}]} as JSON")
	return c
}
