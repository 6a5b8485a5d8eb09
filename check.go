package airlock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/airlockdev/airlock/internal/state"
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
	r, _, err := t.check(ctx, o, true)
	return r, err
}

// check is Check, which records its finding when record says so; empty
// says the change set it checked was empty (a commit would settle
// NoChanges and land nothing).
func (t *Tx) check(ctx context.Context, o CommitOptions, record bool) (*Refusal, bool, error) {
	status, err := t.Status()
	if err != nil {
		return nil, false, err
	}
	if status.Settled() {
		return nil, false, fmt.Errorf("transaction %s is %s: there is nothing to check", t.ID(), status)
	}
	// A check's log outlives the check: its refusal names it.
	scratch, log := t.StateDir(), t.st.Path("check."+validateLog)
	dir, err := os.MkdirTemp(scratch, "check-")
	inRun := errors.Is(err, syscall.EROFS)
	if inRun {
		// An agent's hook inside the transaction's own `airlock run`, where
		// the state root is read-only but for the hook scratch directory:
		// the check is the hook's advice (the run's own commit checks
		// again), so it works there, and nothing outside a hook reads it.
		scratch = t.st.Path(hookDir)
		log = filepath.Join(scratch, "check."+validateLog)
		dir, err = os.MkdirTemp(scratch, "check-")
	}
	if err != nil {
		return nil, false, fmt.Errorf("check transaction %s: %w", t.ID(), err)
	}
	defer os.RemoveAll(dir)
	w := &workspace{dir: dir, log: log, base: t.Base()}
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
		if !record {
			return r, false, nil
		}
		r, err := t.checked(r, "", false, inRun)
		return r, false, err
	}
	if err != nil {
		return nil, false, err
	}
	p.release()
	if !record {
		return p.refusal, p.set.Empty(), nil
	}
	r, err = t.checked(p.refusal, p.set.Digest(), w.limited, inRun)
	return r, p.set.Empty(), err
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
func (t *Tx) checked(r *Refusal, digest string, limited, inRun bool) (*Refusal, error) {
	detail := map[string]any{"diff_digest": digest, "refusal": ""}
	if limited {
		detail["limited"] = limitedNote
	}
	if r != nil {
		detail["refusal"] = string(r.Kind)
		detail["paths"] = rawPaths(r.Paths)
		detail["reason"] = r.Reason
	}
	if inRun {
		return r, t.hookEvent(eventChecked, detail)
	}
	if err := t.event(eventChecked, detail); err != nil {
		return nil, err
	}
	return r, nil
}

// hookDir, in a transaction's state directory, is the one place besides
// its staged tree that the command of its `airlock run` may write: where
// the hooks of an agent run inside it check (Check) and record what they
// found. Nothing that decides a commit, a recovery, gc or a later
// transaction reads it; Events adds the checks recorded there.
const hookDir = "hook"

// hookScratch makes the hook scratch directory before the command starts.
func (t *Tx) hookScratch() (string, error) {
	p := t.st.Path(hookDir)
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("hook scratch directory of transaction %s: %w", t.ID(), err)
	}
	return p, state.CheckDir(p)
}

// hookEvent records a hook's check in the hook scratch directory.
func (t *Tx) hookEvent(name string, detail map[string]any) error {
	line, err := json.Marshal(state.Event{Time: time.Now().UTC(), Event: name, Detail: detail})
	if err != nil {
		return err
	}
	f, err := state.OpenFile(filepath.Join(t.st.Path(hookDir), "events.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("record the check of transaction %s: %w", t.ID(), err)
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// hookEvents are the checks the hooks inside the transaction's run
// recorded (hookEvent): only checks, which decide nothing but what a hook
// says next.
func (t *Tx) hookEvents() []Event {
	data, err := state.ReadFile(filepath.Join(t.st.Path(hookDir), "events.jsonl"))
	if err != nil {
		return nil
	}
	var out []Event
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		var e Event
		if json.Unmarshal(line, &e) == nil && e.Event == eventChecked && !e.Time.IsZero() {
			out = append(out, e)
		}
	}
	return out
}
