package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// checkpointWait bounds how long the PostToolUse hook waits for the
// transaction's lock (another airlock process checkpointing or settling
// it): the agent's next step waits on the hook, and a checkpoint skipped
// costs less than a stalled session.
const checkpointWait = 10 * time.Second

// postToolUse checkpoints a hook transaction's staged workspace after a
// tool call that may have written it, so that `airlock rewind` can take
// the session back to before any later step, whatever the step wrote
// (its shell commands too, which the agent's own rewind does not see).
// It never blocks the agent: it answers nothing, and says on stderr, where
// the other hooks do, why a checkpoint was not taken.
func (r *Runner) postToolUse(ctx context.Context, in *Input) error {
	tx, err := r.find(in.Cwd)
	if err != nil {
		fmt.Fprintf(r.Err, "airlock: no checkpoint after %s: %s\n", in.ToolName, commandline.Message(err))
		return nil
	}
	// Only the session whose WorktreeCreate opened the transaction
	// checkpoints it, as only it ends it (sessionEnd); under `airlock run`
	// the agent is the run's command, and the run's transaction is not
	// checkpointed while it runs.
	if tx == nil || tx.Record().Session == "" || r.getenv("AIRLOCK_TX") == tx.ID() {
		return nil
	}
	if s := tx.Record().Session; s != in.SessionID {
		// Another session's tool call in this workspace (a cd into it, a
		// second agent started there, or the same window after /clear,
		// which gets a new session id): not the owner's step to record.
		fmt.Fprintf(r.Err, "airlock: no checkpoint of %s after %s: session %s opened it, not this session (%s)\n", tx.ID(), in.ToolName, s, in.SessionID)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkpointWait)
	defer cancel()
	cp, err := tx.Checkpoint(ctx, airlock.CheckpointOptions{Message: toolStep(in, realPath(tx.Path())), Auto: airlock.CheckpointByHook, IfChanged: true})
	if err != nil {
		fmt.Fprintf(r.Err, "airlock: no checkpoint of %s after %s: %s\n", tx.ID(), in.ToolName, commandline.Message(err))
		return nil
	}
	if !cp.Unchanged {
		fmt.Fprintf(r.Err, "airlock: checkpoint %d of %s after %s (airlock rewind %s %d returns here)\n", cp.Number, tx.ID(), in.ToolName, tx.ID(), cp.Number)
	}
	return nil
}

// toolStep names a tool call for a checkpoint's message: the tool and
// the file it wrote (relative to the staged workspace when it is in it)
// or the command it ran, cut to a line.
func toolStep(in *Input, staged string) string {
	var args struct {
		FilePath string `json:"file_path"`
		Command  string `json:"command"`
	}
	json.Unmarshal(in.ToolInput, &args)
	what := args.FilePath
	if p := realPath(what); what != "" && within(p, staged) {
		if rel, err := filepath.Rel(staged, p); err == nil {
			what = filepath.ToSlash(rel)
		}
	}
	if what == "" {
		what = args.Command
	}
	what = strings.Join(strings.Fields(what), " ")
	if r := []rune(what); len(r) > 80 {
		what = string(r[:79]) + "…"
	}
	if what == "" {
		return "after " + in.ToolName
	}
	return "after " + in.ToolName + " " + what
}
