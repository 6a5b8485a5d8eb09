package hook

import (
	"fmt"

	"github.com/airlockdev/airlock/internal/commandline"
)

// preToolUse answers a tool call with the guard's decision. A session with
// no transaction is no business of airlock's, nor is one under `airlock
// run` seen at the base's own path (same-path mode: the base's path shows
// the staged tree, so writing it is writing the workspace).
func (r *Runner) preToolUse(agent Agent, in *Input) error {
	d, staged := r.guard(in)
	if d == nil {
		switch agent {
		case Codex, Gemini:
			// Both read stdout as JSON; Gemini would read stderr as
			// the answer if stdout were empty.
			return r.writeJSON(map[string]any{})
		}
		return nil
	}
	reason := d.Reason(staged)
	fmt.Fprintln(r.Err, reason)
	if agent == Gemini {
		// Gemini CLI's BeforeTool: decision "deny" with the reason the
		// agent reads as the tool's error (docs/hooks/reference.md).
		return r.writeJSON(map[string]any{"decision": "deny", "reason": reason})
	}
	return r.writeJSON(map[string]any{
		"hookSpecificOutput": map[string]any{
			"hookEventName":            "PreToolUse",
			"permissionDecision":       "deny",
			"permissionDecisionReason": reason,
		},
	})
}

// guard finds the session's transaction and decides its tool call.
func (r *Runner) guard(in *Input) (*Denial, string) {
	tx, err := r.find(in.Cwd)
	if err != nil {
		// The store cannot be read: say so, and let the call run rather
		// than stop every tool of every session on this machine.
		fmt.Fprintf(r.Err, "airlock: %s\n", commandline.Message(err))
		return nil, ""
	}
	if tx == nil {
		return nil, ""
	}
	cwd := realPath(in.Cwd)
	if r.getenv("AIRLOCK_TX") == tx.ID() && within(cwd, tx.Base()) {
		return nil, ""
	}
	staged := realPath(tx.Path())
	return GuardCall(in.ToolName, in.ToolInput, cwd, Scope{Base: tx.Base(), Staged: staged}), staged
}
