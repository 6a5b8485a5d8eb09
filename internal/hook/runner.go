package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// Agent is a coding agent whose hook protocol airlock speaks.
type Agent string

const (
	Claude Agent = "claude"
	Codex  Agent = "codex"
	Gemini Agent = "gemini"
)

// Agents are the agents airlock answers, in the order help lists them.
var Agents = []Agent{Claude, Codex, Gemini}

// Events lists the events airlock answers for each agent, by the names the
// command line uses (`airlock hook AGENT EVENT`).
var Events = map[Agent][]string{
	Claude: {"worktree-create", "worktree-remove", "stop", "subagent-stop", "session-start", "session-end", "pre-tool-use", "post-tool-use"},
	Codex:  {"stop", "subagent-stop", "session-start", "session-end", "pre-tool-use"},
	Gemini: {"after-agent", "session-start", "before-tool"},
}

// alwaysJSON says whether an agent reads a hook's stdout as JSON whatever
// the event: Codex for Stop and PreToolUse, Gemini CLI for every event (it
// takes stderr as the answer when stdout is empty).
func alwaysJSON(agent Agent, event string) bool {
	switch agent {
	case Codex:
		return event == "stop" || event == "subagent-stop" || event == "pre-tool-use"
	case Gemini:
		return true
	}
	return false
}

// Runner answers hook events against a store.
type Runner struct {
	Store *airlock.Store
	// Out receives the answer the agent reads; Err everything for a person.
	Out, Err io.Writer
	// Getenv reads the hook's environment (AIRLOCK_TX, CLAUDE_PROJECT_DIR).
	Getenv func(string) string
}

func (r *Runner) getenv(k string) string {
	if r.Getenv == nil {
		return ""
	}
	return r.Getenv(k)
}

// Run answers one event: it reads the agent's JSON from in and writes the
// answer. An error means the hook failed; for WorktreeCreate that aborts
// the worktree, which is the point. Codex's Stop never fails: it always
// answers with JSON.
func (r *Runner) Run(ctx context.Context, agent Agent, event string, in io.Reader) error {
	events, ok := Events[agent]
	if !ok {
		return fmt.Errorf("unknown agent %q (want claude, codex or gemini)", agent)
	}
	if !slices.Contains(events, event) {
		return fmt.Errorf("unknown %s hook event %q (want %s)", agent, event, strings.Join(events, ", "))
	}
	input, err := ReadInput(in)
	if err != nil {
		if alwaysJSON(agent, event) {
			// The agent reads stdout as JSON whatever happened.
			fmt.Fprintf(r.Err, "airlock: %s\n", commandline.Message(err))
			return r.writeJSON(map[string]any{})
		}
		return err
	}
	if input.Cwd == "" {
		// Both agents run a hook in the session's directory.
		if wd, err := os.Getwd(); err == nil {
			input.Cwd = wd
		}
	}
	switch event {
	case "worktree-create":
		return r.worktreeCreate(ctx, input)
	case "worktree-remove":
		return r.worktreeRemove(ctx, input)
	case "session-start":
		return r.sessionStart(agent, input)
	case "session-end":
		return r.sessionEnd(ctx, input)
	case "pre-tool-use", "before-tool":
		return r.preToolUse(agent, input)
	case "post-tool-use":
		return r.postToolUse(ctx, input)
	default: // stop, subagent-stop, after-agent
		d := r.stop(ctx, input, event == "subagent-stop")
		if err := r.answerStop(agent, d); err != nil {
			return err
		}
		return d.Stopped
	}
}

// writeJSON writes one JSON object and a newline on stdout.
func (r *Runner) writeJSON(v any) error {
	enc := json.NewEncoder(r.Out)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
