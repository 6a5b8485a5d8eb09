package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// remedy is m in this server's terms: a tool and its arguments where a tool
// does it, the user's own commands where only the user can act.
func remedy(m airlock.Remedy) string {
	// A partial commit's: the same paths again.
	again, part := "call commit again", commandline.PathArgs(m.Paths)
	if part != "" {
		again = "call commit again with the same paths"
	}
	switch m.Kind {
	case airlock.RemedyApprove:
		return fmt.Sprintf("look at them (the diff tool) and, only if the user asked for these changes, %s and approve: true, which asks the user to confirm them; or the user approves them with `airlock review %s` or `airlock commit %s --approve%s`", again, m.Tx, m.Tx, part)
	case airlock.RemedyUserApprove:
		return fmt.Sprintf("only the user can approve them: tell the user, who reviews and lands them with `airlock review %s` or `airlock commit %s --approve%s` (no tool here approves); undo your changes to them if they were not asked for", m.Tx, m.Tx, part)
	case airlock.RemedyReviewAgain:
		return "review it again (diff, and status for its diff_digest) and commit with expect_digest set to the digest you reviewed"
	case airlock.RemedyRebase:
		return fmt.Sprintf("the user can run `airlock rebase %s` (a command line step: no tool here does it), which takes the base's changes in and marks the overlapping edits in your files; then resolve the markers and commit again", m.Tx)
	case airlock.RemedyResolve:
		return fmt.Sprintf("edit the conflict markers (<<<<<<<, |||||||, =======, >>>>>>>) out of these files in the workspace %s, keeping what should land, then commit again", m.Dir)
	case airlock.RemedyRecover:
		return fmt.Sprintf("the user has to run `airlock recover --workdir %s` first (a command line step: no tool here does it)", m.Base)
	}
	return ""
}

// explain is r's reason with its remedy in this server's terms.
func explain(r *airlock.Refusal) string {
	rem := remedy(r.Remedy)
	switch {
	case rem == "":
		return r.Reason
	case r.Reason == "":
		return rem
	}
	return r.Reason + "; " + rem
}

// worded gives h's errors in this server's words: a step that resolves one
// (recover the base, say) is the user's to take at the command line, and
// is named as the user types it.
func worded[In, Out any](h mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		if err != nil {
			if msg := commandline.Message(err); msg != err.Error() {
				err = &wordedError{msg: msg, err: err}
			}
		}
		return res, out, err
	}
}

type wordedError struct {
	msg string
	err error
}

func (e *wordedError) Error() string { return e.msg }
func (e *wordedError) Unwrap() error { return e.err }
