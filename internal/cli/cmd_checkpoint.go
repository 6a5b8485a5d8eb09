package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// checkpointOptions are checkpoint's argument and flags.
type checkpointOptions struct {
	id, message string
	json        bool
}

func newCheckpointCmd(io IO) *cobra.Command {
	var o checkpointOptions
	c := &cobra.Command{
		Use:   "checkpoint ID [-m MSG]",
		Short: "Record the staged workspace as it is now; print the checkpoint's number",
		Long: `Record the staged workspace as it is now, and print the checkpoint's
number (1, 2, 3… per transaction). What is recorded is the change set
against the base at open, every file's bytes kept in the base's content
store (bytes it holds already are not stored again), so that
` + "`airlock rewind ID N`" + ` can put the workspace back exactly as it was.

It refuses while a command of the transaction runs (airlock run, the MCP
run tool), and fails, recording nothing, when a file changes while it is
read: something is still writing in the workspace.`,
		Args: oneID,
		RunE: func(c *cobra.Command, args []string) error {
			o.id = args[0]
			return runCheckpoint(c.Context(), io, o)
		},
	}
	c.Flags().StringVarP(&o.message, "message", "m", "", "a note to know the checkpoint by in airlock checkpoints")
	c.Flags().BoolVar(&o.json, "json", false, "print the checkpoint as one JSON object")
	return c
}

func runCheckpoint(ctx context.Context, io IO, o checkpointOptions) error {
	tx, err := openTx(o.id)
	if err != nil {
		return err
	}
	cp, err := tx.Checkpoint(ctx, airlock.CheckpointOptions{Message: o.message})
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(io, jsonout.FromCheckpoint(tx.ID(), *cp))
	}
	fmt.Fprintln(io.Out, cp.Number)
	fmt.Fprintf(io.Err, "airlock: checkpoint %d of %s (+%d ~%d -%d); airlock rewind %s %d puts the staged workspace back to it\n",
		cp.Number, tx.ID(), cp.Added, cp.Modified, cp.Deleted, tx.ID(), cp.Number)
	return nil
}

// checkpointsOptions are checkpoints' argument and flags.
type checkpointsOptions struct {
	id   string
	json bool
}

func newCheckpointsCmd(io IO) *cobra.Command {
	var o checkpointsOptions
	c := &cobra.Command{
		Use:   "checkpoints ID",
		Short: "List a transaction's checkpoints",
		Long: `List a transaction's checkpoints, oldest first: a line each with its
number, when it was taken, its change set's counts against the base at
open (+added ~modified -deleted), what took it when nothing asked for it
by name ([hook]: an agent's hook after a tool call, [rewind]: a rewind, of
the state it replaced), and its message.`,
		Args: oneID,
		RunE: func(c *cobra.Command, args []string) error {
			o.id = args[0]
			return runCheckpoints(io, o)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print {tx, checkpoints} as one JSON object")
	return c
}

func runCheckpoints(io IO, o checkpointsOptions) error {
	tx, err := openTx(o.id)
	if err != nil {
		return err
	}
	cps, err := tx.Checkpoints()
	if err != nil {
		return err
	}
	if o.json {
		out := jsonout.Checkpoints{Tx: tx.ID(), Checkpoints: []jsonout.Checkpoint{}}
		for _, c := range cps {
			out.Checkpoints = append(out.Checkpoints, jsonout.FromCheckpoint(tx.ID(), c))
		}
		return writeJSON(io, out)
	}
	if len(cps) == 0 {
		fmt.Fprintf(io.Err, "airlock: %s has no checkpoints; airlock checkpoint %s takes one\n", tx.ID(), tx.ID())
		return nil
	}
	for _, c := range cps {
		line := fmt.Sprintf("%-4d %s  +%d ~%d -%d", c.Number, c.Time.Local().Format("2006-01-02 15:04:05"), c.Added, c.Modified, c.Deleted)
		if c.Auto != "" {
			line += "  [" + string(c.Auto) + "]"
		}
		if c.Message != "" {
			line += "  " + escapeValue(c.Message)
		}
		fmt.Fprintln(io.Out, line)
	}
	return nil
}

// rewindOptions are rewind's arguments and flags.
type rewindOptions struct {
	id     string
	number int
	json   bool
}

func newRewindCmd(io IO) *cobra.Command {
	var o rewindOptions
	c := &cobra.Command{
		Use:   "rewind ID N",
		Short: "Put the staged workspace back exactly as it was at checkpoint N",
		Long: `Put the staged workspace back exactly as it was at checkpoint N: whatever
wrote it since, shell commands included, every path is made what the
checkpoint recorded (content, mode, symlink target, or absent: files and
directories made since are removed, deleted ones come back). The base is
not touched. A checkpoint of the workspace as it is is taken first, so
that rewinding to it undoes the rewind; the message names it.

It refuses while a command of the transaction runs (airlock run, the MCP
run tool). Once written, the workspace is compared with the checkpoint by
its bytes: a process still writing in it fails the rewind, naming the
paths.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return fmt.Errorf("rewind takes a transaction ID and a checkpoint number N (airlock checkpoints ID lists them), got %d arguments", len(args))
			}
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 1 {
				return fmt.Errorf("rewind %s: checkpoint number %q is not a number from 1 up (airlock checkpoints %s lists them)", args[0], args[1], args[0])
			}
			o.number = n
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.id = args[0]
			return runRewind(c.Context(), io, o)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print {tx, to, saved, paths} as one JSON object")
	return c
}

func runRewind(ctx context.Context, io IO, o rewindOptions) error {
	tx, err := openTx(o.id)
	if err != nil {
		return err
	}
	r, err := tx.Rewind(ctx, o.number)
	var unknown *airlock.UnknownCheckpointError
	if errors.As(err, &unknown) {
		if len(unknown.Have) == 0 {
			return fmt.Errorf("%w (airlock checkpoint %s takes one)", err, tx.ID())
		}
		return fmt.Errorf("%w (airlock checkpoints %s lists them)", err, tx.ID())
	}
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(io, jsonout.FromRewind(tx.ID(), r))
	}
	fmt.Fprintf(io.Err, "airlock: rewound %s to checkpoint %d (+%d ~%d -%d, %d path(s) written or removed); checkpoint %d holds what was there: airlock rewind %s %d undoes this\n",
		tx.ID(), r.To.Number, r.To.Added, r.To.Modified, r.To.Deleted, r.Paths, r.Saved.Number, tx.ID(), r.Saved.Number)
	return nil
}
