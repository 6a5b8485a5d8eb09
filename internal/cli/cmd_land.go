package cli

import (
	"context"
	"errors"
	"fmt"
	iopkg "io"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
	"github.com/airlockdev/airlock/internal/jsonout"
	"github.com/airlockdev/airlock/internal/landing"
)

// landOptions are land's arguments and flags.
type landOptions struct {
	ids            []string
	validate       string
	remote, branch string
	approve, json  bool
	out            output
	retries        int
	retriesSet     bool // --retries was given: it belongs to --remote
	limits         remoteLimitFlags
}

func newLandCmd(io IO) *cobra.Command {
	var o landOptions
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
--retries times, waiting longer each time (with jitter), then refuses
RemoteMoved. A transaction already on the branch (its commit carries the
trailer Airlock-Tx: ID) is reported, not pushed again.

With --remote and several IDs, they land as a batch, as a merge queue
lands them: one candidate holding all of them, validated once, pushed as
one commit per transaction in one atomic push. When the batch fails
validation, airlock bisects to find the transaction that breaks it,
refuses it ValidationFailed (kept), and lands the rest, each validated.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, ids []string) error {
			if err := checkValidate(c); err != nil {
				return err
			}
			o.ids, o.retriesSet = ids, c.Flags().Changed("retries")
			return runLand(c.Context(), io, o)
		},
	}
	c.Flags().StringVar(&o.validate, "validate", "", "add a validator: run `CMD` via sh -c on each candidate tree before it lands, after that transaction's validate from .airlock.toml, which always runs")
	c.Flags().BoolVar(&o.approve, "approve", false, "approve changes to protected paths")
	c.Flags().BoolVar(&o.json, "json", false, "print {transactions: [{tx, result, error}]} as JSON on stdout instead of the table")
	o.out.register(c)
	c.Flags().StringVar(&o.remote, "remote", "", "land into a git remote: a remote of the base's repository or a URL (with --branch)")
	c.Flags().StringVar(&o.branch, "branch", "", "the remote branch to land into (with --remote)")
	c.Flags().IntVar(&o.retries, "retries", airlock.DefaultRemoteAttempts-1, "with --remote: how many times to fetch, merge, validate and push again when another host pushed first")
	o.limits.register(c)
	return c
}

func runLand(ctx context.Context, io IO, o landOptions) error {
	if (o.remote == "") != (o.branch == "") {
		return errors.New("--remote and --branch go together: name the remote and the branch to land into")
	}
	if o.retriesSet && o.remote == "" {
		return errors.New("--retries belongs to a landing into a remote (--remote REMOTE --branch BRANCH)")
	}
	if o.retries < 0 {
		return fmt.Errorf("--retries %d: give 0 or more", o.retries)
	}
	limits, err := o.limits.limits(o.remote)
	if err != nil {
		return err
	}
	st, err := store()
	if err != nil {
		return err
	}
	if o.remote != "" {
		return landRemote(ctx, io, st, o.ids, airlock.RemoteOptions{Remote: o.remote, Branch: o.branch, Attempts: o.retries + 1, Limits: limits,
			CommitOptions: airlock.CommitOptions{Validate: o.validate, Approve: o.approve}}, o.out, o.json)
	}
	var results []airlock.RemoteLanded
	for _, l := range st.Land(context.WithoutCancel(ctx), o.ids, airlock.CommitOptions{Validate: o.validate, Approve: o.approve}) {
		results = append(results, airlock.RemoteLanded{ID: l.ID, Result: l.Result, Err: l.Err})
	}
	refused, failed, err := reportLandings(io, results, o.out, o.json, jsonout.Land{})
	if err != nil {
		return err
	}
	if err := interrupted(results); err != nil {
		return err
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d of %d transactions could not be landed", failed, len(o.ids))
	case refused > 0:
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%d of %d transactions were refused and are kept; the others landed", refused, len(o.ids))}
	}
	return nil
}

// landRemote prints one line per transaction: landed (with the commit),
// already (on the branch before: nothing pushed), refused or failed.
func landRemote(ctx context.Context, io IO, st *airlock.Store, ids []string, o airlock.RemoteOptions, out output, asJSON bool) error {
	results := st.LandRemote(context.WithoutCancel(ctx), ids, o)
	refused, failed, err := reportLandings(io, results, out, asJSON, jsonout.Land{Branch: o.Branch, Remote: landing.Redact(o.Remote)})
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
// interrupted one were not tried. In a batch, every transaction not yet
// settled when the signal came says so, not only the last.
func interrupted(results []airlock.RemoteLanded) error {
	for _, l := range results {
		var irq *airlock.InterruptedError
		if errors.As(l.Err, &irq) {
			return &exitError{code: 128 + int(irq.Signal), msg: fmt.Sprintf("land stopped: %s; the transactions after it were not tried", commandline.Message(l.Err))}
		}
	}
	return nil
}

// reportLandings prints what a land did: the settle blocks on stderr, and
// a line per transaction on stdout, or with asJSON doc, its transactions
// filled in. A landing into a remote has a commit. On a terminal the
// lines on stdout are the glance, one a transaction: no block unless
// --block.
func reportLandings(io IO, results []airlock.RemoteLanded, o output, asJSON bool, doc jsonout.Land) (refused, failed int, err error) {
	for _, l := range results {
		switch {
		case l.Result == nil:
		case o.quiet || o.glance(io):
			writeWarnings(io.Err, l.Result)
		default:
			writeBlock(io.Err, l.Result)
		}
	}
	out := io.Out
	if asJSON {
		// The table's lines say nothing the JSON does not.
		out = iopkg.Discard
	}
	doc.Transactions = []jsonout.Landed{}
	for _, l := range results {
		e := jsonout.Landed{Already: l.Already, Attempts: l.Attempts, Commit: l.Commit, Tx: l.ID}
		if l.Result != nil {
			e.Result = resultJSON(l.Result)
		}
		var r *airlock.Refusal
		var irq *airlock.InterruptedError
		switch {
		case errors.As(l.Err, &r):
			refused++
			fmt.Fprintf(out, "refused  %s  %s\n", l.ID, commandline.Refusal(r))
		case errors.As(l.Err, &irq):
			// Not a failure: the caller's signal (see interrupted).
			fmt.Fprintf(out, "stopped  %s  %s\n", l.ID, commandline.Message(l.Err))
			e.Error = commandline.Message(l.Err)
		case l.Err != nil:
			failed++
			fmt.Fprintf(out, "failed   %s  %s\n", l.ID, commandline.Message(l.Err))
			e.Error = commandline.Message(l.Err)
		case l.Already:
			fmt.Fprintf(out, "already  %s  %s\n", l.ID, l.Commit)
		case l.Commit != "" && l.Result.Outcome != airlock.NoChanges:
			fmt.Fprintf(out, "landed   %s  %s  +%d ~%d -%d  attempts=%d\n", l.ID, l.Commit, l.Result.Added, l.Result.Modified, l.Result.Deleted, l.Attempts)
		default:
			fmt.Fprintf(out, "%-8s %s  +%d ~%d -%d\n", landWord(l.Result), l.ID, l.Result.Added, l.Result.Modified, l.Result.Deleted)
		}
		doc.Transactions = append(doc.Transactions, e)
	}
	if asJSON {
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
