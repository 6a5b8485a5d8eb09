package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/progress"
)

// runOptions are run's command and flags.
type runOptions struct {
	tx               txFlags
	noSamePath, json bool
	argv             []string // the command to run
}

func newRunCmd(io IO) *cobra.Command {
	var o runOptions
	c := &cobra.Command{
		Use:   "run [flags] -- COMMAND [ARG...]",
		Short: "Run COMMAND in a staged workspace; commit its changes if it exits 0, else discard them",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("run needs a command: airlock run [flags] -- COMMAND [ARG...]")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkValidate(c); err != nil {
				return err
			}
			o.argv = args
			return runRun(c.Context(), io, o)
		},
	}
	o.tx.register(c)
	o.tx.out.register(c)
	c.Flags().BoolVar(&o.noSamePath, "no-same-path", false, "run COMMAND at the staged path instead of seeing the staged tree at the base's own path")
	c.Flags().BoolVar(&o.json, "json", false, "print the result and receipt as JSON on stdout (as commit --json, with the command's exit_code); COMMAND's own stdout then goes to stderr")
	c.Flags().SetInterspersed(false)
	return c
}

func runRun(ctx context.Context, io IO, o runOptions) error {
	f, noSamePath, argv := &o.tx, o.noSamePath, o.argv
	if err := f.check(); err != nil {
		return err
	}
	rpath, err := receiptPath(f.receipt)
	if err != nil {
		return err
	}
	st, err := store()
	if err != nil {
		return err
	}
	// On a terminal (where the meter is) a line that overwrites itself,
	// erased before the command writes.
	progress.Status(ctx, "staging "+displayDir(f.workdir))
	open := f.openOptions(argv)
	open.ForRun = true
	tx, err := st.Open(ctx, open)
	progress.Status(ctx, "")
	if err != nil {
		return err
	}
	for _, w := range tx.Record().Warnings {
		fmt.Fprintf(io.Err, "airlock: warning: %s\n", w)
	}
	if why := tx.SamePathOff(); why != "" && !noSamePath && !f.out.quiet {
		fmt.Fprintf(io.Err, "airlock: %s; running at %s\n", why, tx.Path())
	}
	// With --json stdout carries one JSON value and nothing else, so a
	// script can parse it: the command's output moves to stderr.
	cmdOut := io.Out
	if o.json {
		cmdOut = io.Err
	}
	res, err := tx.Run(ctx, airlock.RunOptions{
		Argv: argv, SamePath: !noSamePath,
		Stdin: io.In, Stdout: cmdOut, Stderr: io.Err,
		Settle: airlock.CommitOptions{Approve: f.approve, ReceiptCopy: rpath, Validate: f.validate},
		Ended: func(r *airlock.RunResult) {
			if r.Fallback != "" {
				fmt.Fprintf(io.Err, "airlock: same-path mode unavailable (%s); running at %s\n", r.Fallback, tx.Path())
			}
			if r.Uncontained != "" && r.Uncontained != r.Fallback && !f.out.quiet {
				fmt.Fprintf(io.Err, "airlock: the command ran uncontained (%s): what it leaves running is not ended\n", r.Uncontained)
			}
			if len(r.Ended) > 0 && !f.out.quiet {
				fmt.Fprintf(io.Err, "airlock: ended what the command left running: %s\n", strings.Join(r.Ended, ", "))
			}
			if r.Succeeded {
				progress.Status(ctx, "committing")
			}
		},
	})
	if res != nil && res.Settled != nil {
		err = report(ctx, io, f.out, res.Settled, runCause(res), err)
		if !f.out.quiet {
			noteBranch(context.WithoutCancel(ctx), io, tx)
		}
		if o.json {
			m := resultJSON(res.Settled)
			m.ExitCode = &res.ExitCode
			m.Measured, m.Unwatched = "walk", &res.Unwatched
			if res.Watched {
				m.Measured = "watch"
			}
			if jerr := writeJSON(io, m); jerr != nil {
				return jerr
			}
		}
	}
	return err
}

// runCause is why a run discarded its transaction, for the glance: the
// command failed. "" when it succeeded.
func runCause(res *airlock.RunResult) string {
	switch {
	case res.Succeeded:
		return ""
	case res.Signal != 0:
		return fmt.Sprintf("the command was killed by signal %d (%s)", int(res.Signal), res.Signal)
	}
	return fmt.Sprintf("the command exited %d", res.ExitCode)
}

func displayDir(d string) string {
	if d == "" {
		return "the current directory"
	}
	return d
}
