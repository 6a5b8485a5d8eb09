package airlock

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// eventChecked records a Check and what it found.
const eventChecked = "checked"

// Check is a dry run of Commit: it computes and freezes the change set and
// runs every check a commit would (unsupported entries, an interrupted
// apply, the base's identity, drift and three-way merges, protected paths,
// boundaries, shared inodes and validation on a candidate tree), under the
// base's lock, and applies nothing. It returns the refusal a commit made
// now would meet, or nil when it would go through. Approve and Validate in
// o mean what they mean to Commit; the other fields are ignored.
//
// The base is not touched, and the transaction's status does not change:
// a check only appends a "checked" event, with the refusal it found and
// the change set's digest, to the event log.
//
// A process inside `airlock run`'s same-path view, where the base's path
// shows the staged workspace, checks against the real base as the owning
// `airlock run` process sees it. Where that view cannot be reached (an
// unprivileged user namespace may not look into its parent's), the check
// is limited to what needs no base: unsupported entries, protected paths,
// boundaries, and validation of the staged tree (the base at open plus the
// change set). Its checked event then says so under "limited"; the commit
// that `airlock run` makes when the command exits checks everything.
func (t *Tx) Check(ctx context.Context, o CommitOptions) (_ *Refusal, err error) {
	defer exported(&err)
	status, err := t.Status()
	if err != nil {
		return nil, err
	}
	if status.Settled() {
		return nil, fmt.Errorf("transaction %s is %s: there is nothing to check", t.ID(), status)
	}
	dir, err := os.MkdirTemp(t.StateDir(), "check-")
	if err != nil {
		return nil, fmt.Errorf("check transaction %s: %w", t.ID(), err)
	}
	defer os.RemoveAll(dir)
	// A check's log outlives the check: its refusal names it.
	w := &workspace{dir: dir, log: t.st.Path("check." + validateLog), base: t.Base()}
	if t.checkIdentity() != nil && t.inStagedView() {
		// Seen from inside the same-path view the base's path names the
		// staged workspace; the real base is reached through the owner.
		if view, ok := ownerView(t); ok {
			w.base = view
		} else {
			w.limited = true
		}
	}
	p, err := t.preflightLocal(ctx, w, o)
	var r *Refusal
	if errors.As(err, &r) {
		// This transaction's own apply was interrupted: there is no
		// change set, and nothing was looked at.
		return t.checked(r, "", false)
	}
	if err != nil {
		return nil, err
	}
	p.release()
	return t.checked(p.refusal, p.set.Digest(), w.limited)
}

// inStagedView reports whether this process sees the staged workspace at
// the base's path: it runs inside `airlock run`'s same-path view.
func (t *Tx) inStagedView() bool {
	b, err := identity(t.Base())
	if err != nil {
		return false
	}
	s, err := identity(t.Path())
	return err == nil && b.Dev == s.Dev && b.Ino == s.Ino
}

// limitedNote is what a limited check's event says.
const limitedNote = "the base is hidden by the same-path view and cannot be reached from here; drift, merges and shared inodes were not checked, and validation ran on the staged tree"

// checked records a check's finding in the event log.
func (t *Tx) checked(r *Refusal, digest string, limited bool) (*Refusal, error) {
	detail := map[string]any{"diff_digest": digest, "refusal": ""}
	if limited {
		detail["limited"] = limitedNote
	}
	if r != nil {
		detail["refusal"] = string(r.Kind)
		detail["paths"] = rawPaths(r.Paths)
		detail["reason"] = r.Reason
	}
	if err := t.event(eventChecked, detail); err != nil {
		return nil, err
	}
	return r, nil
}
