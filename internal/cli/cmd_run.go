package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/launch"
)

func newRunCmd(io IO) *cobra.Command {
	var f txFlags
	var noSamePath bool
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
			return runRun(c.Context(), io, &f, noSamePath, args)
		},
	}
	f.register(c)
	c.Flags().BoolVar(&noSamePath, "no-same-path", false, "run COMMAND at the staged path instead of seeing the staged tree at the base's own path")
	c.Flags().SetInterspersed(false)
	return c
}

func runRun(ctx context.Context, io IO, f *txFlags, noSamePath bool, argv []string) error {
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
	if io.ErrTerminal && !f.quiet {
		fmt.Fprintf(io.Err, "airlock: staging %s\n", displayDir(f.workdir))
	}
	tx, err := st.Open(ctx, f.openOptions(argv))
	if err != nil {
		return err
	}
	for _, w := range tx.Record().Warnings {
		fmt.Fprintf(io.Err, "airlock: warning: %s\n", w)
	}
	env := append(os.Environ(),
		"AIRLOCK_TX="+tx.ID(),
		"AIRLOCK_PORT_BASE="+strconv.Itoa(tx.Record().PortBase))
	samePath := !noSamePath && !worktreeOff(io, tx, f.quiet)
	started := time.Now()
	res, runErr := launch.Run(ctx, launch.Spec{
		Argv: argv, Staged: tx.Path(), Base: tx.Base(), Dir: startDir(tx.Base()),
		Env: env, SamePath: samePath,
		Stdin: io.In, Stdout: io.Out, Stderr: io.Err,
	})
	if res.Fallback != "" && samePath {
		fmt.Fprintf(io.Err, "airlock: same-path mode unavailable (%s); running at %s\n", res.Fallback, tx.Path())
	}
	code := res.ExitCode
	so := airlock.SettleOptions{Approve: f.approve, ExitCode: &code, StartedAt: started, ReceiptCopy: rpath, Validate: f.validate}
	// Settling must finish even when airlock itself was interrupted while
	// the command ran: the signal was the command's to handle.
	sctx := context.WithoutCancel(ctx)
	var settled *airlock.Result
	var settleErr error
	if runErr == nil && code == 0 {
		if io.ErrTerminal && !f.quiet {
			fmt.Fprintln(io.Err, "airlock: committing")
		}
		settled, settleErr = tx.Commit(sctx, so)
	} else {
		if code < 0 {
			code = -1
			so.ExitCode = nil
		}
		settled, settleErr = tx.Discard(sctx, so)
	}
	if settled != nil && !f.quiet {
		writeBlock(io.Err, settled)
		noteBranch(sctx, io, tx)
	} else if settled != nil {
		writeWarnings(io.Err, settled)
	}
	var refusal *airlock.Refusal
	switch {
	case errors.As(settleErr, &refusal):
		return &exitError{code: exitRefused, msg: refusal.Error()}
	case settleErr != nil:
		return settleErr
	}
	var execErr *launch.ExecError
	switch {
	case errors.As(runErr, &execErr):
		return runErr
	case runErr != nil:
		return fmt.Errorf("run %s: %w", argv[0], runErr)
	case code != 0:
		return &exitError{code: code}
	}
	return nil
}

// startDir is the directory, relative to the base, where the command starts:
// the counterpart of the current directory when it lies inside the base.
func startDir(base string) string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	rel, err := filepath.Rel(base, wd)
	if err != nil || !filepath.IsLocal(rel) {
		return ""
	}
	return filepath.ToSlash(rel)
}

func displayDir(d string) string {
	if d == "" {
		return "the current directory"
	}
	return d
}
