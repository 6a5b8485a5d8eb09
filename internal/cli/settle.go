package cli

import (
	"context"
	"encoding/json"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// settle loads a transaction, settles it with do, and reports the result.
func settle(ctx context.Context, io IO, id string, quiet, asJSON bool, do func(context.Context, *airlock.Tx) (*airlock.Result, error)) error {
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
		if !quiet {
			writeBlock(io.Err, res)
			noteBranch(ctx, io, tx)
		} else {
			writeWarnings(io.Err, res)
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
