package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/review"
)

// reviewOptions are review's argument and flags.
type reviewOptions struct {
	id                string
	named             bool // an ID was given; else the newest reviewable one
	workdir, validate string
	timeout           time.Duration
	noBrowser, json   bool
	out               output
}

func newReviewCmd(io IO) *cobra.Command {
	var o reviewOptions
	c := &cobra.Command{
		Use:   "review [ID]",
		Short: "A review page on 127.0.0.1: the diff, Commit / Discard / Approve",
		Long: `review serves a page for one transaction on 127.0.0.1, at a random port and
under a random token, prints its URL on stdout and opens it in a browser when
one is available. The page shows the change set as a unified or side-by-side
diff, the refusal if any, the protected paths, and Discard. It offers Commit
only when a plain commit would land now, and Approve & commit (protected paths
approved) only when protected paths hold one and the approving commit would
land: the page is made once the commit's own checks, validation included, have
run; when any commit would be refused it says why and offers neither.

Without ID it reviews the newest open or refused transaction over the current
directory (or --workdir), or the one whose staged workspace holds it.

Each file has a checkbox, all checked: a commit with some unchecked lands
the checked files only (a partial commit, bound to the change set shown), and
the page stays open on the rest.

review ends when the transaction is committed or discarded from the page
(exit 0), on Ctrl-C or after --timeout (exit 1, or 75 when the page's last
commit was refused); the transaction is kept unless it was settled.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkValidate(c); err != nil {
				return err
			}
			if len(args) == 1 {
				o.id, o.named = args[0], true
			}
			return runReview(c.Context(), io, o)
		},
	}
	c.Flags().StringVar(&o.workdir, "workdir", "", "without ID: the base whose newest transaction to review (default: the current directory)")
	c.Flags().DurationVar(&o.timeout, "timeout", 0, "stop the review after this long (0: no limit)")
	c.Flags().BoolVar(&o.noBrowser, "no-browser", false, "only print the URL; do not open a browser")
	c.Flags().StringVar(&o.validate, "validate", "", validateHelp)
	o.out.register(c)
	c.Flags().BoolVar(&o.json, "json", false, "print the settle result as JSON on stdout (as commit --json) when the page settled or refused the transaction; the URL then goes to stderr")
	return c
}

func runReview(ctx context.Context, io IO, o reviewOptions) error {
	st, err := store()
	if err != nil {
		return err
	}
	var tx *airlock.Tx
	if o.named {
		tx, err = st.Tx(o.id)
	} else {
		tx, err = newestReviewable(st, o.workdir)
	}
	if err != nil {
		return err
	}
	srv, err := review.New(tx, review.Options{Validate: o.validate, Log: io.Err})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if o.json {
		// stdout holds the JSON alone; the URL is for a person.
		fmt.Fprintf(io.Err, "airlock: review page: %s\n", srv.URL())
	} else {
		fmt.Fprintln(io.Out, srv.URL())
	}
	opened := !o.noBrowser && review.OpenBrowser(srv.URL())
	how := "open the URL above in a browser"
	if opened {
		how = "opened in your browser"
	}
	fmt.Fprintf(io.Err, "airlock: reviewing transaction %s (%s); Ctrl-C stops the review and keeps the transaction\n", tx.ID(), how)
	out, err := srv.Serve(ctx)
	if err != nil {
		return err
	}
	if out.Result != nil && (out.Settled || out.Err != nil) {
		report(ctx, io, o.out, out.Result, "", nil)
	}
	if out.Result != nil && o.json && (out.Settled || out.Err != nil) {
		if err := writeJSON(io, resultJSON(out.Result)); err != nil {
			return err
		}
	}
	var refusal *airlock.Refusal
	switch {
	case out.Settled:
		return nil
	case errors.As(out.Err, &refusal):
		return &exitError{code: exitRefused, msg: fmt.Sprintf("review ended; transaction %s is kept, refused (%s)", tx.ID(), refusal.Kind)}
	case out.Err != nil:
		return out.Err
	}
	why := "interrupted"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "timed out after " + o.timeout.String()
	}
	return &exitError{code: 1, msg: fmt.Sprintf("review %s with no decision; transaction %s is kept", why, tx.ID())}
}

// newestReviewable is the transaction a review without an id is for: the
// one whose staged workspace holds dir, else the newest open or refused
// one over the base that is dir or holds it.
func newestReviewable(st *airlock.Store, dir string) (*airlock.Tx, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("current directory: %w", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	if _, err := os.Stat(st.Dir()); err != nil {
		return nil, fmt.Errorf("no transactions to review: the state directory %s does not exist", st.Dir())
	}
	ids, err := st.IDs()
	if err != nil {
		return nil, err
	}
	var best *airlock.Tx
	for _, id := range ids {
		tx, err := st.Tx(id)
		if err != nil {
			continue
		}
		status, err := tx.Status()
		if err != nil || (status != airlock.StatusOpen && status != airlock.StatusRefused) {
			continue
		}
		if inside(abs, tx.Path()) {
			return tx, nil
		}
		if !inside(abs, tx.Base()) {
			continue
		}
		if best == nil || tx.Record().CreatedAt.After(best.Record().CreatedAt) {
			best = tx
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no open or refused transaction over %s; name one (airlock list)", abs)
	}
	return best, nil
}

// inside reports whether p is dir or lies beneath it.
func inside(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(rel)
}
