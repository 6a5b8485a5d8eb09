package hook

import (
	"fmt"
	"strings"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// sessionStart tells the agent, as SessionStart's additionalContext, that
// it works inside a transaction: which one, over which base, what is
// protected. Outside a transaction it answers nothing ({} to an agent
// that reads stdout as JSON whatever the event).
func (r *Runner) sessionStart(agent Agent, in *Input) error {
	tx, err := r.find(in.Cwd)
	if err != nil || tx == nil {
		if err != nil {
			fmt.Fprintf(r.Err, "airlock: %s\n", commandline.Message(err))
		}
		if alwaysJSON(agent, "session-start") {
			return r.writeJSON(map[string]any{})
		}
		return nil
	}
	return r.writeJSON(map[string]any{
		"hookSpecificOutput": map[string]any{
			"hookEventName":     "SessionStart",
			"additionalContext": Context(tx, within(realPath(in.Cwd), tx.Base())),
		},
	})
}

// Context is what an agent working in tx is told at the start of a
// session. samePath says the agent sees the staged workspace at the base's
// own path (`airlock run`'s same-path mode).
func Context(tx *airlock.Tx, samePath bool) string {
	rec := tx.Record()
	var b strings.Builder
	fmt.Fprintf(&b, "This session works inside airlock transaction %s, opened %s over the base %s (backend %s).\n",
		tx.ID(), rec.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"), tx.Base(), rec.Backend)
	if samePath {
		fmt.Fprintf(&b, "The directory %s you see is a private staged copy of the base, shown at the base's own path. ", tx.Base())
	} else {
		fmt.Fprintf(&b, "Your working directory %s is a private staged copy of the base. ", tx.Path())
	}
	b.WriteString("Nothing you change reaches the base until the transaction is committed: all or nothing, after fail-closed checks")
	if rec.Validate != "" {
		fmt.Fprintf(&b, " and the project's validation (`%s`, run on the base plus your changes)", rec.Validate)
	}
	b.WriteString(". Work only in the staged copy; do not write to the base by another path.\n")
	if len(rec.Protect) > 0 {
		fmt.Fprintf(&b, "Protected paths (a change under them is refused unless the user approves it): %s.\n", strings.Join(rec.Protect, ", "))
	}
	if len(rec.Exclude) > 0 {
		fmt.Fprintf(&b, "Not copied into the workspace: %s.\n", strings.Join(rec.Exclude, ", "))
	}
	b.WriteString("Not covered by the transaction: the network, databases, other processes and files outside the workspace; those effects happen at once.\n")
	switch rec.StopHook {
	case "off":
	case "commit":
		b.WriteString("When you stop, airlock commits the transaction; if the commit is refused, you are told why and what to fix.\n")
	default:
		b.WriteString("When you stop, airlock checks whether the transaction would commit; if not, you are told why and what to fix.\n")
	}
	return b.String()
}
