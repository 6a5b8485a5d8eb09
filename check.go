package airlock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/journal"
)

// eventChecked records a Check and what it found.
const eventChecked = "checked"

// scratch is where a check keeps what a commit would keep in the
// transaction's own state (the frozen change set, merged content, the
// validation candidate), so that a check never disturbs a commit of the
// same transaction running at the same time. base, when set, is the path
// through which this process reads the base (see ownerView). limited says
// the base cannot be seen at all (see Check).
type scratch struct {
	dir     string
	base    string
	limited bool
}

// objectsPath is where the frozen and merged content is.
func (t *Tx) objectsPath() string {
	if t.scratch != nil {
		return filepath.Join(t.scratch.dir, "objects")
	}
	return t.st.Path(objectsDir)
}

// scratchPath is where a commit's throw-away file or directory name is.
func (t *Tx) scratchPath(name string) string {
	if t.scratch != nil {
		return filepath.Join(t.scratch.dir, name)
	}
	return t.st.Path(name)
}

// validateLogPath is where the validator's output is kept. A check's
// outlives the check: its refusal names it.
func (t *Tx) validateLogPath() string {
	if t.scratch != nil {
		return t.st.Path("check." + validateLog)
	}
	return t.st.Path(validateLog)
}

// baseRead is the path through which the base is read: its own path,
// except where this process sees the staged workspace there.
func (t *Tx) baseRead() string {
	if t.scratch != nil && t.scratch.base != "" {
		return t.scratch.base
	}
	return t.Base()
}

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
func (t *Tx) Check(ctx context.Context, o SettleOptions) (*Refusal, error) {
	status, err := t.Status()
	if err != nil {
		return nil, err
	}
	if status.Settled() {
		return nil, fmt.Errorf("transaction %s is %s: there is nothing to check", t.ID(), status)
	}
	if status == StatusInterrupted {
		return t.checked(interrupted(t.Base(), t.ID()), "", false)
	}
	dir, err := os.MkdirTemp(t.StateDir(), "check-")
	if err != nil {
		return nil, fmt.Errorf("check transaction %s: %w", t.ID(), err)
	}
	defer os.RemoveAll(dir)
	c := *t
	c.scratch = &scratch{dir: dir}
	if t.checkIdentity() != nil && t.inStagedView() {
		// Seen from inside the same-path view the base's path names the
		// staged workspace; the real base is reached through the owner.
		if view, ok := ownerView(t); ok {
			c.scratch.base = view
		} else {
			c.scratch.limited = true
		}
	}
	r, digest, err := c.check(ctx, o)
	if err != nil {
		return nil, err
	}
	return t.checked(r, digest, c.scratch.limited)
}

// check is Check with its scratch state in place.
func (t *Tx) check(ctx context.Context, o SettleOptions) (*Refusal, string, error) {
	set, err := t.diff(ctx)
	if err != nil {
		return nil, "", err
	}
	if set.Empty() {
		return nil, set.Digest(), nil
	}
	objects := t.objectsPath()
	if err := os.Mkdir(objects, 0o700); err != nil {
		return nil, "", fmt.Errorf("check transaction %s: %w", t.ID(), err)
	}
	if err := changeset.Freeze(ctx, set, t.contentDir(), objects); err != nil {
		if r, ok := stagedChanged(err); ok {
			return r, set.Digest(), nil
		}
		return nil, "", err
	}
	digest := set.Digest()
	if len(set.Unsupported) > 0 {
		var p []string
		for _, u := range set.Unsupported {
			p = append(p, string(u))
		}
		return refuse(UnsupportedEntry, p, "the staged workspace holds FIFOs, sockets or device nodes, which airlock never applies; remove them"), digest, nil
	}
	base, err := t.store.st.Base(t.Base())
	if err != nil {
		return nil, "", err
	}
	unlock, err := base.Lock(ctx)
	if err != nil {
		return nil, "", err
	}
	defer unlock()
	if id, ok, err := base.Inflight(); err != nil {
		return nil, "", err
	} else if ok {
		return interrupted(t.Base(), id), digest, nil
	}
	if t.scratch.limited {
		r, err := t.checkLimited(ctx, o, set)
		return r, digest, err
	}
	root, r, err := t.openBase(t.baseRead())
	if err != nil || r != nil {
		return r, digest, err
	}
	defer root.Close()
	gate, err := t.projectNow()
	if err != nil {
		return nil, "", err
	}
	ops, drifted, escapes, err := checkDrift(root, set)
	if err != nil {
		return nil, "", err
	}
	if len(drifted) > 0 {
		var merged []journal.Op
		merged, _, r, err = t.mergeDrifted(ctx, root, set, drifted)
		if err != nil {
			return nil, "", err
		}
		ops = append(ops, merged...)
	}
	if r == nil {
		if r, err = t.checkProtected(set, o.Approve, gate); err != nil {
			return nil, "", err
		}
	}
	if r == nil {
		r = checkBoundary(set, escapes)
	}
	if r == nil {
		r = checkSharedInode(root, set, t.Path(), objects)
	}
	if v := t.validators(o, gate); r == nil && len(v) > 0 {
		if r, _, err = t.validate(ctx, ops, v, gate); err != nil {
			return nil, "", err
		}
	}
	return r, digest, nil
}

// checkLimited is the check made where the base cannot be seen: the
// checks of the change set alone, and validation of the staged tree.
func (t *Tx) checkLimited(ctx context.Context, o SettleOptions, set *changeset.Set) (*Refusal, error) {
	gate, err := t.projectNow()
	if err != nil {
		return nil, err
	}
	r, err := t.checkProtected(set, o.Approve, gate)
	if err != nil || r != nil {
		return r, err
	}
	if r = checkBoundary(set, nil); r != nil {
		return r, nil
	}
	if v := t.validators(o, gate); len(v) > 0 {
		t.scratch.base = t.Path()
		r, _, err := t.validate(ctx, nil, v, gate)
		return r, err
	}
	return nil, nil
}

// inStagedView reports whether this process sees the staged workspace at
// the base's path: it runs inside `airlock run`'s same-path view.
func (t *Tx) inStagedView() bool {
	bdev, bino, err := identity(t.Base())
	if err != nil {
		return false
	}
	sdev, sino, err := identity(t.Path())
	return err == nil && bdev == sdev && bino == sino
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
