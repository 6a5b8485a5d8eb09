package hook

import (
	"fmt"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// A hook speaks to two readers: the agent, which it blocks with what to fix
// (agentRemedy: the agent cannot approve, it tells the user), and the user
// at the terminal, to whom it names the commands to type (the command
// line's own words: commandline.Remedy).

// agentRemedy is m in the terms of an agent a hook blocked.
func agentRemedy(m airlock.Remedy) string {
	switch m.Kind {
	case airlock.RemedyApprove, airlock.RemedyUserApprove:
		return fmt.Sprintf("undo your changes to them if they were not asked for; if they were, say so and stop: the user approves them with `airlock review %s` or `airlock commit %s --approve`", m.Tx, m.Tx)
	case airlock.RemedyReviewAgain:
		return commandline.Remedy(m)
	case airlock.RemedyRebase:
		return fmt.Sprintf("or, if the user prefers, they run `airlock rebase %s`, which takes the base's version in and marks the overlapping edits in your files for you to resolve", m.Tx)
	case airlock.RemedyResolve:
		return fmt.Sprintf("edit the conflict markers (<<<<<<<, |||||||, =======, >>>>>>>) out of these files in %s, keeping what should land, then finish again", m.Dir)
	case airlock.RemedyRecover:
		return fmt.Sprintf("the user has to run `airlock recover --workdir %s` first (a command line step: no tool here does it)", m.Base)
	}
	return ""
}

// explain is r's reason followed by its remedy as say words it.
func explain(r *airlock.Refusal, say func(airlock.Remedy) string) string {
	rem := say(r.Remedy)
	switch {
	case rem == "":
		return r.Reason
	case r.Reason == "":
		return rem
	}
	return r.Reason + "; " + rem
}
