package airlock

import (
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
	// reviewed (SettleOptions.ExpectDiffDigest: the review page, `commit
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
	Reason string   // one line for a person: what happened and what to do
}

func (r *Refusal) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused (%s)", r.Kind)
	if r.Reason != "" {
		b.WriteString(": ")
		b.WriteString(r.Reason)
	}
	if len(r.Paths) > 0 {
		b.WriteString(": ")
		b.WriteString(quotePaths(r.Paths, 10))
	}
	return b.String()
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
