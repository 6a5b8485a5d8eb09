package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

// rebaseOptions are rebase's argument and flag.
type rebaseOptions struct {
	id   string
	json bool
}

func newRebaseCmd(io IO) *cobra.Command {
	var o rebaseOptions
	c := &cobra.Command{
		Use:   "rebase ID [--json]",
		Short: "Move a transaction onto the base as it is now, marking overlapping edits to resolve",
		Long: `Move a transaction onto the base as it is now. Each path the base changed
since the transaction opened is taken into its staged workspace: one the
transaction did not change takes the base's version; a text file both
changed is merged three ways, and where the edits overlap it holds both
between git-style conflict markers (<<<<<<<, ||||||| with the base the
transaction started from, =======, >>>>>>>). A commit refuses (Conflicted)
while a marker line remains in one of those files; once they are resolved
it lands over the base's newer content.

The rebase refuses (exit 75), leaving the transaction as it was, where both
sides changed a path in a way it can neither merge nor mark (binary content,
a file against a directory or a deletion, no known ancestor), and where the
base changes again while it reads it. It prints a line per path it took in:
taken, merged or conflict.`,
		Args: oneID,
		RunE: func(c *cobra.Command, args []string) error {
			o.id = args[0]
			return runRebase(c.Context(), io, o)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print one JSON object: the paths taken, merged and marked as conflicts")
	return c
}

func runRebase(ctx context.Context, io IO, o rebaseOptions) error {
	tx, err := openTx(o.id)
	if err != nil {
		return err
	}
	res, err := tx.Rebase(ctx)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(io, res)
	}
	for _, p := range []struct {
		word  string
		paths []airlock.Bytes
	}{{"taken", res.Taken}, {"merged", res.Merged}, {"conflict", res.Conflicts}} {
		for _, path := range p.paths {
			fmt.Fprintf(io.Out, "%-8s %s\n", p.word, escapeValue(string(path)))
		}
	}
	switch {
	case len(res.Taken)+len(res.Merged)+len(res.Conflicts) == 0:
		fmt.Fprintf(io.Err, "airlock: %s is on the base as it is now already\n", o.id)
	case len(res.Conflicts) > 0:
		fmt.Fprintf(io.Err, "airlock: rebased %s; resolve the conflict markers in %d file(s) under %s (e.g. %s), then airlock commit %s\n",
			o.id, len(res.Conflicts), escapeValue(tx.Path()), escapeValue(filepath.Join(tx.Path(), filepath.FromSlash(string(res.Conflicts[0])))), o.id)
	default:
		fmt.Fprintf(io.Err, "airlock: rebased %s onto the base as it is now; airlock diff %s shows its changes\n", o.id, o.id)
	}
	return nil
}
