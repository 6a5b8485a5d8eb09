package airlock

import (
	"encoding/json"
	"errors"
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
	// RemoteTimeout: a landing into a git remote found the remote silent
	// past its RemoteLimits (the fetch, or a push after which the remote
	// still held the heads fetched): nothing landed. Not the change's
	// fault: land it again once the remote answers.
	RemoteTimeout RefusalKind = "RemoteTimeout"
	// Conflicted: a rebase (Tx.Rebase) left conflict markers in paths
	// both sides changed, and what the commit would land still holds a
	// marker line in one of them: resolve them in the staged workspace.
	Conflicted RefusalKind = "Conflicted"
)

// Refusal is the error a commit returns when it refused. The base is as it
// was before the commit began and the transaction is kept.
//
// A refusal is data: its kind, its paths, its reason and its remedy. Each
// front end (the command line, the MCP tools, an agent's hook, the review
// page) says it in its own terms; Error says it in this package's.
type Refusal struct {
	Kind   RefusalKind
	Paths  []string // base-relative paths the refusal names, if any
	Reason string   // one line for a person: what happened (and what to do, when Remedy is empty)
	// Remedy is what to do about it when that depends on how the caller
	// reaches airlock (a flag on the command line, a tool argument over
	// MCP, a Go caller's CommitOptions field).
	Remedy Remedy
}

// Error is the refusal in one line, its remedy in this package's terms.
func (r *Refusal) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused (%s)", r.Kind)
	s := r.Reason
	if rem := r.Remedy.String(); rem != "" {
		if s != "" {
			s += "; "
		}
		s += rem
	}
	if s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	if len(r.Paths) > 0 {
		b.WriteString(": ")
		b.WriteString(quotePaths(r.Paths, 10))
	}
	return b.String()
}

// RemedyKind names what a caller can do about a refusal.
type RemedyKind string

const (
	// RemedyApprove: the change set touches protected paths; committing
	// it again with approval lands them.
	RemedyApprove RemedyKind = "approve"
	// RemedyUserApprove: the change set touches protected paths, and the
	// caller, an agent, cannot approve them (CommitOptions.AgentApproval):
	// a person does.
	RemedyUserApprove RemedyKind = "user_approve"
	// RemedyReviewAgain: the change set is not the one reviewed; review
	// it again and commit the digest reviewed.
	RemedyReviewAgain RemedyKind = "review_again"
	// RemedyRecover: an apply over Base was interrupted; recover it first.
	RemedyRecover RemedyKind = "recover"
	// RemedyRebase: the base changed under the transaction with edits
	// that overlap its own; rebasing it (Tx.Rebase) takes the base's
	// changes in and marks the overlaps for a person to resolve.
	RemedyRebase RemedyKind = "rebase"
	// RemedyResolve: a rebase's conflict markers remain in the staged
	// workspace Dir; edit them out, then commit again.
	RemedyResolve RemedyKind = "resolve"
)

// Remedy is what to do about a refusal, as data: each front end words it
// for its own caller; String words it for a Go caller.
type Remedy struct {
	Kind RemedyKind `json:"kind,omitempty"`
	Tx   string     `json:"tx,omitempty"`   // the transaction to act on
	Base string     `json:"base,omitempty"` // RemedyRecover: the base to recover
	Dir  string     `json:"dir,omitempty"`  // RemedyResolve: the staged workspace to edit
	// Paths are the paths of the partial commit that was refused
	// (CommitOptions.Paths, as given): the commit to make again is of
	// those paths.
	Paths []string `json:"paths,omitempty"`
}

// String is the remedy in this package's terms, or "" when there is none.
func (m Remedy) String() string {
	switch m.Kind {
	case RemedyApprove:
		return fmt.Sprintf("look at the changes to them (Tx.Diff) and, if they are wanted, commit %s again with CommitOptions.Approve", m.Tx)
	case RemedyUserApprove:
		return fmt.Sprintf("only a person approves them: an agent's own approval (CommitOptions.AgentApproval) does not; a person commits %s with CommitOptions.Approve", m.Tx)
	case RemedyReviewAgain:
		return fmt.Sprintf("review %s again (Tx.ReviewDiff gives the digest of what it shows) and commit with CommitOptions.ExpectDiffDigest set to the digest reviewed", m.Tx)
	case RemedyRecover:
		return fmt.Sprintf("call Store.Recover on %s first", m.Base)
	case RemedyRebase:
		return fmt.Sprintf("rebase %s (Tx.Rebase): the base's changes are taken in and the overlapping edits marked, to be resolved before it commits", m.Tx)
	case RemedyResolve:
		return fmt.Sprintf("edit the markers out of them in %s (Tx.Path), then commit %s again", m.Dir, m.Tx)
	}
	return ""
}

// quotePaths quotes paths for one line of text: the first most of them,
// then how many more.
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
	evs, err := t.Events()
	if err != nil {
		return nil, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if r := evs[i].Refusal(); r != nil {
			return r, nil
		}
	}
	return nil, nil
}

// Refusal is the refusal a refused event records, or nil when e is not
// one.
func (e Event) Refusal() *Refusal {
	if e.Event != eventRefused {
		return nil
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
		r.Remedy.Tx, r.Remedy.Base, r.Remedy.Dir = str(m["tx"]), str(m["base"]), str(m["dir"])
	}
	return r
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// StepKind names a step that resolves an error: a StepError's, or a
// CancelledError's (StepCommit).
type StepKind string

const (
	// StepRecover: recover the interrupted apply over Base (Store.Recover).
	StepRecover StepKind = "recover"
	// StepRecoverMoved: Base is the base moved there, or its file system
	// mounted there (or, when Base is "", the base's new path): recover
	// it, confirming that (RecoverOptions.Moved).
	StepRecoverMoved StepKind = "recover_moved"
	// StepRecoverBaseGone: the base at Base was deleted for good: clear its
	// interrupted apply, keeping its journal (RecoverOptions.BaseGone).
	StepRecoverBaseGone StepKind = "recover_base_gone"
	// StepMoved names the confirmation itself (RecoverOptions.Moved), where
	// a sentence says what it can or cannot do.
	StepMoved StepKind = "moved"
	// StepCommit: commit transaction Tx again (Tx.Commit).
	StepCommit StepKind = "commit"
	// StepRemoteLog: read the receipt chain on Branch of Remote
	// (Store.RemoteLog).
	StepRemoteLog StepKind = "remote_log"
)

// Step is a step that resolves an error, as data: each front end names it
// in its own terms (a command line, a tool); String names it in this
// package's.
type Step struct {
	Kind   StepKind `json:"kind"`
	Base   string   `json:"base,omitempty"`
	Tx     string   `json:"tx,omitempty"`
	Remote string   `json:"remote,omitempty"`
	Branch string   `json:"branch,omitempty"`
}

// String is the step in this package's terms.
func (s Step) String() string {
	switch s.Kind {
	case StepRecover:
		return fmt.Sprintf("call Store.Recover on %s", s.Base)
	case StepRecoverMoved:
		if s.Base == "" {
			return "call Store.RecoverWith on its new path with RecoverOptions.Moved"
		}
		return fmt.Sprintf("call Store.RecoverWith on %s with RecoverOptions.Moved", s.Base)
	case StepRecoverBaseGone:
		return fmt.Sprintf("call Store.RecoverWith on %s with RecoverOptions.BaseGone", s.Base)
	case StepMoved:
		return "RecoverOptions.Moved"
	case StepCommit:
		return fmt.Sprintf("Tx.Commit of %s", s.Tx)
	case StepRemoteLog:
		return fmt.Sprintf("Store.RemoteLog (Remote %s, Branch %s)", s.Remote, s.Branch)
	}
	return string(s.Kind)
}

// StepError is an error that steps of the caller's resolve: its message
// says what failed, on which path, and names each step in this package's
// terms; Steps holds them as data, for a front end to name in its own.
type StepError struct {
	Err   error
	Steps []Step
}

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// stepErrorf is fmt.Errorf whose args may be Steps: each is named by its
// String where format puts it, and kept as data in the StepError. The
// steps an error among args names are kept too, since its text (with %v,
// unwrapped) names them.
func stepErrorf(format string, args ...any) error {
	e := &StepError{Err: fmt.Errorf(format, args...)}
	for _, a := range args {
		switch a := a.(type) {
		case Step:
			e.Steps = append(e.Steps, a)
		case error:
			var inner *StepError
			if errors.As(a, &inner) {
				e.Steps = append(e.Steps, inner.Steps...)
			}
		}
	}
	return e
}
