package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// diffOptions are diff's argument and flags.
type diffOptions struct {
	id                     string
	stat, nameStatus, json bool
}

func newDiffCmd(io IO) *cobra.Command {
	var o diffOptions
	c := &cobra.Command{
		Use:   "diff ID [--stat|--name-status]",
		Short: "The change set as a git-style patch (binary-aware; `git apply --binary` accepts it)",
		Args:  oneID,
		RunE: func(c *cobra.Command, args []string) error {
			o.id = args[0]
			return runDiff(c.Context(), io, o)
		},
	}
	c.Flags().BoolVar(&o.stat, "stat", false, "print a diffstat, like git diff --stat")
	c.Flags().BoolVar(&o.nameStatus, "name-status", false, "print A/M/D/T and the path of each change, like git diff --name-status")
	c.Flags().BoolVar(&o.json, "json", false, "print {tx, format, text, notes} as JSON: text is the patch, stat or name-status")
	return c
}

func runDiff(ctx context.Context, io IO, o diffOptions) error {
	if o.stat && o.nameStatus {
		return errors.New("--stat and --name-status cannot be combined")
	}
	tx, err := openTx(o.id)
	if err != nil {
		return err
	}
	format, name := airlock.DiffPatch, "patch"
	switch {
	case o.stat:
		format, name = airlock.DiffStat, "stat"
	case o.nameStatus:
		format, name = airlock.DiffNameStatus, "name-status"
	}
	if o.json {
		var text strings.Builder
		notes, err := tx.Diff(ctx, &text, format)
		if err != nil {
			return err
		}
		return writeJSON(io, jsonout.Diff{Format: name, Notes: jsonout.NonNil(notes), Text: text.String(), Tx: tx.ID()})
	}
	out := bufio.NewWriter(io.Out)
	notes, err := tx.Diff(ctx, out, format)
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	for _, n := range notes {
		fmt.Fprintf(io.Err, "airlock: not in the patch: %s\n", n)
	}
	return err
}
