package hook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// Decision is the answer to a Stop event.
type Decision struct {
	// Block keeps the agent going, with Reason as its next instruction.
	Block  bool
	Reason string
	// Message, when not blocking, is shown to the user (systemMessage).
	Message string
	// Stopped is set when SIGINT or SIGTERM stopped the validation (the
	// agent tool ending the hook): no verdict, nothing to block on; the
	// hook answers nothing and exits with it.
	Stopped error
}

// stop decides a Stop (or SubagentStop) event. What it does follows the
// project config recorded at open: check (the default) runs the commit's
// checks and validation without applying; commit commits; off does
// nothing. Under `airlock run` the run commits when its command exits, so
// there the stop hook only checks. A subagent's stop only checks too: a
// subagent ending its turn is not its session ending, and the transaction
// its working directory names may be the main agent's, half done (an
// isolated subagent's own transaction settles at WorktreeRemove).
func (r *Runner) stop(ctx context.Context, in *Input, subagent bool) Decision {
	tx, err := r.find(in.Cwd)
	if err != nil {
		return r.failed("", in, fmt.Errorf("find the transaction of %s: %w", in.Cwd, err))
	}
	if tx == nil {
		return Decision{}
	}
	mode := tx.Record().StopHook
	if mode == "off" {
		return Decision{}
	}
	underRun := r.getenv("AIRLOCK_TX") == tx.ID()
	prev := lastFinding(tx)
	if mode == "commit" && !underRun && !subagent {
		res, err := tx.Commit(ctx, airlock.CommitOptions{})
		if r, ok := asRefusal(err); ok {
			return refused(tx, r, prev, lastFinding(tx), in)
		}
		if interrupted(err) {
			return Decision{Stopped: err}
		}
		if err != nil {
			return r.failed(tx.ID(), in, err)
		}
		msg := fmt.Sprintf("airlock: transaction %s %s: %d added, %d modified, %d deleted in %s",
			tx.ID(), res.Outcome, res.Added, res.Modified, res.Deleted, tx.Base())
		fmt.Fprintln(r.Err, msg)
		return Decision{Message: msg}
	}
	ref, err := tx.Check(ctx, airlock.CommitOptions{})
	if interrupted(err) {
		return Decision{Stopped: err}
	}
	if err != nil {
		return r.failed(tx.ID(), in, err)
	}
	cur := lastFinding(tx)
	if cur != nil && cur.limited != "" {
		fmt.Fprintf(r.Err, "airlock: transaction %s checked in part: %s\n", tx.ID(), cur.limited)
	}
	if ref != nil {
		return refused(tx, ref, prev, cur, in)
	}
	return Decision{}
}

// interrupted reports whether err is a validation SIGINT or SIGTERM
// stopped.
func interrupted(err error) bool {
	var irq *airlock.InterruptedError
	return errors.As(err, &irq)
}

// failed is the answer when airlock itself could not decide: block once,
// since a gate that cannot look must not wave the agent through, but not
// again, so that a broken state cannot keep an agent running forever.
func (r *Runner) failed(id string, in *Input, err error) Decision {
	msg := commandline.Message(err)
	fmt.Fprintf(r.Err, "airlock: %s\n", msg)
	what := "airlock could not check this session's transaction"
	if id != "" {
		what = fmt.Sprintf("airlock could not check transaction %s", id)
	}
	if in.StopHookActive {
		return Decision{Message: fmt.Sprintf("%s: %s", what, msg)}
	}
	return Decision{Block: true, Reason: fmt.Sprintf("%s: %s. Tell the user; `airlock show %s` shows the transaction's state.", what, msg, id)}
}

// finding is what a check or commit recorded: the refusal kind ("" for
// none), the paths it named and the change set it looked at.
type finding struct {
	kind, digest string
	paths        []string
	limited      string // why the check could not see the base, if so
}

// lastFinding reads the newest checked or refused event.
func lastFinding(tx *airlock.Tx) *finding {
	evs, err := tx.Events()
	if err != nil {
		return nil
	}
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Event != "checked" && e.Event != "refused" {
			continue
		}
		f := &finding{}
		f.kind, _ = e.Detail["refusal"].(string)
		f.digest, _ = e.Detail["diff_digest"].(string)
		f.limited, _ = e.Detail["limited"].(string)
		if ps, ok := e.Detail["paths"].([]any); ok {
			for _, p := range ps {
				s, _ := p.(string)
				f.paths = append(f.paths, s)
			}
		}
		return f
	}
	return nil
}

func (f *finding) same(g *finding) bool {
	return f != nil && g != nil && f.kind == g.kind && f.digest == g.digest && slices.Equal(f.paths, g.paths)
}

// refused answers a refusal. The agent is blocked with what to fix, unless
// it was already told of this very refusal of this very change set (it
// stopped again without changing anything): then the stop goes through and
// the user is told, since only the user can decide now.
func refused(tx *airlock.Tx, ref *airlock.Refusal, prev, cur *finding, in *Input) Decision {
	if prev.same(cur) && (in.StopHookActive || cur.digest != "") {
		return Decision{Message: fmt.Sprintf("airlock: transaction %s would still be refused (%s): %s. The changes are kept; review them with `airlock review %s`.",
			tx.ID(), ref.Kind, commandline.Explain(ref), tx.ID())}
	}
	return Decision{Block: true, Reason: Reason(tx, ref)}
}

// Reason tells an agent why its transaction would be refused and what it
// can do about it.
func Reason(tx *airlock.Tx, ref *airlock.Refusal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "airlock: committing transaction %s would be refused (%s): %s.", tx.ID(), ref.Kind, strings.TrimSuffix(explain(ref, agentRemedy), "."))
	if len(ref.Paths) > 0 {
		fmt.Fprintf(&b, "\nPaths: %s", strings.Join(ref.Paths, ", "))
	}
	if h := hint(tx, ref.Kind); h != "" {
		b.WriteString("\n")
		b.WriteString(h)
	}
	fmt.Fprintf(&b, "\nThe base %s has not been touched; your changes are kept.", tx.Base())
	return b.String()
}

// hint says what the agent can do about a refusal of this kind, where the
// refusal's own remedy (said in the hook's terms by Explain) does not.
func hint(tx *airlock.Tx, kind airlock.RefusalKind) string {
	switch kind {
	case airlock.ProtectedPathNotApproved:
		return "These paths are protected."
	case airlock.ValidationFailed:
		return "The project's validation failed on the base plus your changes: fix what its output shows, then finish again."
	case airlock.BaseDrift:
		return "These files changed in the base " + tx.Base() + " since the transaction opened, in a way airlock cannot merge: read their current version there and make your copy agree with it (or leave them as they were at open), then finish again."
	case airlock.MergeConflict:
		return "These files changed in the base " + tx.Base() + " too, and the edits overlap yours: read their current version there and redo your edit on top of it, then finish again."
	case airlock.BoundaryEscape:
		return "These paths would leave the workspace or be reached through a symlink: remove them or replace the symlinks by real files or directories."
	case airlock.UnsupportedEntry:
		return "Remove these FIFOs, sockets or device nodes from the workspace: airlock never applies them."
	case airlock.SharedInode:
		return "These files are hard links to the base's own files: replace each by a copy (cp, not ln)."
	case airlock.StagedChanged:
		return "These files changed while the commit was reading them: stop every process still writing in the workspace, then finish again."
	case airlock.InterruptedApply:
		return "Stop and tell the user."
	case airlock.Conflicted:
		return "A rebase marked where these files' edits overlap the base's: resolve each conflict, keeping what should land, then finish again."
	}
	return ""
}

func asRefusal(err error) (*airlock.Refusal, bool) {
	var r *airlock.Refusal
	return r, errors.As(err, &r)
}

// answerStop writes a stop decision as the agent documents it: a block is
// {"decision":"block","reason":…} for all three (Gemini CLI's AfterAgent
// takes "block" as "deny": a retry with the reason as the next prompt).
// Otherwise Claude Code reads no output as "let it stop", and Codex and
// Gemini CLI read stdout as JSON, {} at least.
func (r *Runner) answerStop(agent Agent, d Decision) error {
	switch {
	case d.Block:
		return r.writeJSON(map[string]any{"decision": "block", "reason": d.Reason})
	case d.Message != "":
		return r.writeJSON(map[string]any{"systemMessage": d.Message})
	case agent == Codex || agent == Gemini:
		return r.writeJSON(map[string]any{})
	}
	return nil
}
