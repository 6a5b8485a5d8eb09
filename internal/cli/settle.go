package cli

import (
	"context"
	"encoding/json"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
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

func resultJSON(res *airlock.Result) map[string]any {
	m := map[string]any{
		"tx": res.TxID, "outcome": res.Outcome, "added": res.Added, "modified": res.Modified,
		"deleted": res.Deleted, "receipt_path": res.ReceiptPath, "receipt": res.Receipt,
		"repeat": res.Repeat,
	}
	if res.Refusal != nil {
		m["refusal"] = res.Refusal.Kind
		m["refused_paths"] = rawPaths(res.Refusal.Paths)
		m["reason"] = commandline.Explain(res.Refusal)
	}
	if len(res.Kept) > 0 {
		m["kept"] = rawPaths(res.Kept)
	}
	if len(res.Validators) > 0 {
		m["validators"] = rawPaths(res.Validators)
	}
	if len(res.Merged) > 0 {
		m["merged"] = rawPaths(res.Merged)
	}
	if res.Branch != nil {
		m["branch"], m["branch_head"] = res.Branch.Name, res.Branch.Head
	}
	return m
}

// rawPaths gives paths the receipt's JSON form, in which a path that is
// not valid UTF-8 keeps its bytes ({"base64": ...}) instead of turning
// into U+FFFD.
func rawPaths(paths []string) []airlock.Bytes {
	out := make([]airlock.Bytes, len(paths))
	for i, p := range paths {
		out[i] = airlock.Bytes(p)
	}
	return out
}

// recoverJSON is recover's --json object (docs/json.md).
func recoverJSON(rr *airlock.RecoverResult) map[string]any {
	action := "rolled_back"
	switch {
	case rr.TxID == "":
		action = "nothing"
	case rr.BaseGone:
		action = "base_gone"
	case rr.Orphaned:
		action = "orphaned"
	case rr.RolledForward:
		action = "rolled_forward"
	}
	m := map[string]any{
		"base": rr.Base, "tx": rr.TxID, "action": action,
		"displaced": nonNil(rr.Displaced), "notes": nonNil(rr.Notes),
	}
	if action == "rolled_back" {
		m["digest"] = rr.Digest
	}
	if rr.Journal != "" {
		m["journal"] = rr.Journal
	}
	if rr.Result != nil {
		m["result"] = resultJSON(rr.Result)
	}
	return m
}

func writeJSON(io IO, v any) error {
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
