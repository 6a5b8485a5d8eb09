package airlock

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RefusalKind names why a commit did not happen. The values are the refusal
// kinds of docs/reference.md and appear verbatim in receipts and on stderr.
type RefusalKind string

const (
	BaseDrift                RefusalKind = "BaseDrift"
	MergeConflict            RefusalKind = "MergeConflict"
	ProtectedPathNotApproved RefusalKind = "ProtectedPathNotApproved"
	BoundaryEscape           RefusalKind = "BoundaryEscape"
	SharedInode              RefusalKind = "SharedInode"
	UnsupportedEntry         RefusalKind = "UnsupportedEntry"
	ValidationFailed         RefusalKind = "ValidationFailed"
	ApplyFailed              RefusalKind = "ApplyFailed"
	InterruptedApply         RefusalKind = "InterruptedApply"
	// StagedChanged: a changed staged file was not, when the commit read
	// it, the file the change set measured (written to, replaced, or put
	// behind a symlink, a FIFO or a device node): the command is still
	// writing in the workspace. Nothing in its place was read.
	StagedChanged RefusalKind = "StagedChanged"
	// ReviewStale: the commit was bound to a change set the caller
	// reviewed (CommitOptions.ExpectDiffDigest: the review page, `commit
	// --expect-digest`, the MCP commit tool's expect_digest), and the
	// change set is no longer that one: the agent changed the staged
	// workspace after the review.
	ReviewStale RefusalKind = "ReviewStale"
	// RemoteMoved: a landing into a git remote (Store.LandRemote) found
	// the branch (or its receipt notes) moved by another pusher on every
	// attempt, up to its bound; each attempt fetched, merged and validated
	// afresh, and nothing was pushed.
	RemoteMoved RefusalKind = "RemoteMoved"
)

// Refusal is the error a commit returns when it refused. The base is as it
// was before the commit began and the transaction is kept.
type Refusal struct {
	Kind   RefusalKind
	Paths  []string // base-relative paths the refusal names, if any
	Reason string   // one line for a person: what happened (and what to do, when Remedy is empty)
	// Remedy is what to do about it when that depends on how the caller
	// reaches airlock: Explain says it in the terms of the caller's own
	// interface (a flag on the command line, a tool argument over MCP).
	Remedy Remedy
}

// Error is the refusal as the command line says it.
func (r *Refusal) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused (%s)", r.Kind)
	if s := r.Explain(SurfaceCLI); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	if len(r.Paths) > 0 {
		b.WriteString(": ")
		b.WriteString(quotePaths(r.Paths, 10))
	}
	return b.String()
}

// Explain is the reason with the remedy said for surface s.
func (r *Refusal) Explain(s Surface) string {
	rem := r.Remedy.say(s)
	switch {
	case rem == "":
		return r.Reason
	case r.Reason == "":
		return rem
	}
	return r.Reason + "; " + rem
}

// Surface is how a caller reaches airlock, and so the terms a remedy is
// given in.
type Surface string

const (
	SurfaceCLI    Surface = "cli"    // the airlock command line
	SurfaceMCP    Surface = "mcp"    // the tools of `airlock mcp`
	SurfaceHook   Surface = "hook"   // an agent's hook: the agent reads it, the user acts
	SurfaceReview Surface = "review" // the review page's buttons
)

// RemedyKind names what a caller can do about a refusal.
type RemedyKind string

const (
	// RemedyApprove: the change set touches protected paths; committing
	// it again with approval lands them.
	RemedyApprove RemedyKind = "approve"
	// RemedyUserApprove: the change set touches protected paths, and the
	// caller, an agent, cannot approve them (CommitOptions.AgentApproval):
	// a person does, with `airlock review` or `airlock commit --approve`.
	RemedyUserApprove RemedyKind = "user_approve"
	// RemedyReviewAgain: the change set is not the one reviewed; review
	// it again and commit the digest reviewed.
	RemedyReviewAgain RemedyKind = "review_again"
	// RemedyRecover: an apply over Base was interrupted; recover it first.
	RemedyRecover RemedyKind = "recover"
)

// Remedy is what to do about a refusal, as data; its words are the
// surface's (Refusal.Explain).
type Remedy struct {
	Kind RemedyKind `json:"kind,omitempty"`
	Tx   string     `json:"tx,omitempty"`   // the transaction to act on
	Base string     `json:"base,omitempty"` // RemedyRecover: the base to recover
}

func (m Remedy) say(s Surface) string {
	switch m.Kind {
	case RemedyApprove:
		switch s {
		case SurfaceMCP:
			return fmt.Sprintf("look at them (the diff tool) and, only if the user asked for these changes, call commit again with approve: true, which asks the user to confirm them; or the user approves them with `airlock review %s` or `airlock commit %s --approve`", m.Tx, m.Tx)
		case SurfaceHook:
			return fmt.Sprintf("undo your changes to them if they were not asked for; if they were, say so and stop: the user approves them with `airlock review %s` or `airlock commit %s --approve`", m.Tx, m.Tx)
		case SurfaceReview:
			return "look at them, and press Approve & commit if they are wanted"
		}
		return fmt.Sprintf("review them (airlock diff %s) and commit with --approve", m.Tx)
	case RemedyUserApprove:
		switch s {
		case SurfaceMCP:
			return fmt.Sprintf("only the user can approve them: tell the user, who reviews and lands them with `airlock review %s` or `airlock commit %s --approve` (no tool here approves); undo your changes to them if they were not asked for", m.Tx, m.Tx)
		case SurfaceHook:
			return fmt.Sprintf("undo your changes to them if they were not asked for; if they were, say so and stop: the user approves them with `airlock review %s` or `airlock commit %s --approve`", m.Tx, m.Tx)
		case SurfaceReview:
			return "look at them, and press Approve & commit if they are wanted"
		}
		return fmt.Sprintf("only a person approves them: review them with `airlock review %s` (or `airlock diff %s`) and commit with `airlock commit %s --approve`", m.Tx, m.Tx, m.Tx)
	case RemedyReviewAgain:
		switch s {
		case SurfaceMCP:
			return "review it again (diff, and status for its diff_digest) and commit with expect_digest set to the digest you reviewed"
		case SurfaceReview:
			return "reload the page, review it again and commit what you reviewed"
		}
		return fmt.Sprintf("review it again (airlock diff %s; airlock show %s --json gives its diff_digest) and commit with --expect-digest set to the digest you reviewed", m.Tx, m.Tx)
	case RemedyRecover:
		if s == SurfaceCLI {
			return fmt.Sprintf("run `airlock recover --workdir %s` first", m.Base)
		}
		return fmt.Sprintf("the user has to run `airlock recover --workdir %s` first (a command line step: no tool here does it)", m.Base)
	}
	return ""
}

func quotePaths(paths []string, most int) string {
	var q []string
	for i, p := range paths {
		if i == most {
			q = append(q, fmt.Sprintf("and %d more", len(paths)-most))
			break
		}
		q = append(q, fmt.Sprintf("%q", p))
	}
	return strings.Join(q, ", ")
}

func refuse(kind RefusalKind, paths []string, format string, args ...any) *Refusal {
	return &Refusal{Kind: kind, Paths: paths, Reason: fmt.Sprintf(format, args...)}
}

// rawPaths keeps paths' exact bytes in JSON (an event's detail, Info): a
// name that is not valid UTF-8 would otherwise come back as U+FFFD.
func rawPaths(paths []string) []Bytes {
	out := make([]Bytes, len(paths))
	for i, p := range paths {
		out[i] = Bytes(p)
	}
	return out
}

// LastRefusal is the refusal of the transaction's newest refused commit,
// as its event log recorded it, or nil when none was refused.
func (t *Tx) LastRefusal() (_ *Refusal, err error) {
	defer exported(&err)
	evs, err := t.st.Events()
	if err != nil {
		return nil, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Event != eventRefused {
			continue
		}
		r := &Refusal{}
		kind, _ := e.Detail["refusal"].(string)
		r.Kind = RefusalKind(kind)
		if ps, ok := e.Detail["paths"].([]any); ok {
			for _, p := range ps {
				if b, err := json.Marshal(p); err == nil {
					var raw Bytes
					if json.Unmarshal(b, &raw) == nil {
						r.Paths = append(r.Paths, string(raw))
					}
				}
			}
		}
		cause, ok := e.Detail["cause"].(string)
		if !ok {
			// Recorded before remedies were data: the reason says all.
			cause, _ = e.Detail["reason"].(string)
		}
		r.Reason = cause
		if m, ok := e.Detail["remedy"].(map[string]any); ok {
			r.Remedy.Kind = RemedyKind(str(m["kind"]))
			r.Remedy.Tx, r.Remedy.Base = str(m["tx"]), str(m["base"])
		}
		return r, nil
	}
	return nil, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
