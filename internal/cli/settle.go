package cli

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
	"github.com/airlockdev/airlock/internal/jsonout"
	"github.com/airlockdev/airlock/internal/progress"
)

// output is how a settling command reports what it settled on stderr:
// --quiet and --block.
type output struct {
	quiet, block bool
}

// register adds --quiet and --block to c, a command that settles, and
// refuses the two together.
func (o *output) register(c *cobra.Command) {
	c.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print no airlock.* block (nor, on a terminal, the summary)")
	c.Flags().BoolVar(&o.block, "block", false, "print the airlock.* block even when stderr is a terminal, where a summary of at most three lines takes its place")
	c.PreRunE = func(*cobra.Command, []string) error {
		if o.quiet && o.block {
			return errors.New("--block and --quiet contradict each other: --quiet prints no block; give one of them")
		}
		return nil
	}
}

// glance reports whether a settle is told to a person: stderr is a
// terminal and --block did not ask for the block. Anywhere else a program
// may be reading, and gets the block exactly.
func (o output) glance(io IO) bool { return io.ErrTerminal && !o.block }

// report prints res on stderr as o says: the glance, the airlock.* block,
// or with --quiet only its warnings. It returns err, marked as told when
// the glance already said it (a refusal), so that Main does not say it
// again.
func report(ctx context.Context, io IO, o output, res *airlock.Result, cause string, err error) error {
	// The status line ("committing") ends here: what follows stays.
	progress.Status(ctx, "")
	switch {
	case o.quiet:
		writeWarnings(io.Err, res)
	case o.glance(io):
		writeGlance(io.Err, res, cause)
		var r *airlock.Refusal
		if res.Outcome == airlock.Refused && errors.As(err, &r) {
			return &toldError{err}
		}
	default:
		writeBlock(io.Err, res)
	}
	return err
}

// toldError is an error the command has already told the user in its own
// words: Main exits with its code and prints nothing more.
type toldError struct{ error }

func (e *toldError) Unwrap() error { return e.error }

// settle loads a transaction, settles it with do, and reports the result.
func settle(ctx context.Context, io IO, id string, o output, asJSON bool, do func(context.Context, *airlock.Tx) (*airlock.Result, error)) error {
	st, err := store()
	if err != nil {
		return err
	}
	tx, err := st.Tx(id)
	if err != nil {
		return err
	}
	res, err := do(context.WithoutCancel(ctx), tx)
	if res != nil {
		err = report(ctx, io, o, res, "", err)
		if !o.quiet {
			noteBranch(ctx, io, tx)
		}
		if asJSON {
			if jerr := writeJSON(io, resultJSON(res)); jerr != nil {
				return jerr
			}
		}
	}
	return err
}

// resultJSON is res's settle result, its refusal in the command line's
// words.
func resultJSON(res *airlock.Result) *jsonout.Settle {
	return jsonout.NewSettle(res, commandline.Explain)
}

func writeJSON(io IO, v any) error {
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
