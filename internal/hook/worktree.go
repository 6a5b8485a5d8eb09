package hook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// worktreeCreate opens a transaction over the project for Claude Code's
// --worktree or an isolated subagent, and prints only the staged
// workspace's absolute path: Claude Code reads stdout as that path, and
// any other exit than 0 aborts the worktree.
func (r *Runner) worktreeCreate(ctx context.Context, in *Input) error {
	base := r.projectDir(in)
	if base == "" {
		return errors.New("WorktreeCreate input has no cwd and CLAUDE_PROJECT_DIR is not set: no project to open a transaction over")
	}
	outer, err := r.find(base)
	if err != nil {
		return err
	}
	if outer != nil {
		return fmt.Errorf("%s is inside the workspace of airlock transaction %s, and a transaction cannot be opened inside another; start the worktree session from %s", base, outer.ID(), outer.Base())
	}
	name := in.worktreeName()
	id := txID(name)
	if id != "" {
		if tx, err := r.Store.Tx(id); err == nil {
			if unsettled(tx) && tx.Base() == realPath(base) {
				// The worktree was removed earlier with its changes kept:
				// a session under the same name takes it up again.
				fmt.Fprintf(r.Err, "airlock: resuming transaction %s over %s (its changes were kept); Claude works in %s\n", tx.ID(), tx.Base(), tx.Path())
				_, err := fmt.Fprintln(r.Out, tx.Path())
				return err
			}
			id = uniqueID(id, time.Now())
		}
	}
	tx, err := r.Store.Open(ctx, airlock.OpenOptions{Base: base, ID: id, Command: []string{"claude", "--worktree", name}, Session: in.SessionID})
	if err != nil {
		return err
	}
	for _, w := range tx.Record().Warnings {
		fmt.Fprintf(r.Err, "airlock: warning: %s\n", w)
	}
	fmt.Fprintf(r.Err, "airlock: opened transaction %s over %s; Claude works in %s; nothing reaches the base before `airlock commit %s` (or `airlock review %s`)\n",
		tx.ID(), tx.Base(), tx.Path(), tx.ID(), tx.ID())
	// Checkpoint 1 is the workspace as it opened: the PostToolUse hook
	// checkpoints after each step, and a rewind to before the first step
	// needs this one. The session starts without it if it cannot be taken.
	if _, err := tx.Checkpoint(ctx, airlock.CheckpointOptions{Message: "at open", Auto: airlock.CheckpointByHook}); err != nil {
		fmt.Fprintf(r.Err, "airlock: no checkpoint of %s at open: %s\n", tx.ID(), commandline.Message(err))
	}
	_, err = fmt.Fprintln(r.Out, tx.Path())
	return err
}

// projectDir is the directory a worktree isolates: Claude Code's project
// directory when the hook runs inside it, else the input's cwd.
func (r *Runner) projectDir(in *Input) string {
	project := r.getenv("CLAUDE_PROJECT_DIR")
	switch {
	case in.Cwd == "":
		return project
	case project != "" && within(realPath(in.Cwd), realPath(project)):
		return project
	}
	return in.Cwd
}

// txID turns a worktree's slug into a transaction id ([A-Za-z0-9._-],
// at most 64 bytes); "" lets airlock generate one.
func txID(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	id := b.String()
	if len(id) > 64 {
		id = id[:64]
	}
	if strings.Trim(id, ".") == "" {
		return ""
	}
	return id
}

// uniqueID adds a time suffix to an id already taken by a settled or
// foreign transaction.
func uniqueID(id string, now time.Time) string {
	suffix := "-" + now.UTC().Format("20060102-150405.000")
	if len(id)+len(suffix) > 64 {
		id = id[:64-len(suffix)]
	}
	return id + suffix
}

// worktreeRemove runs when Claude Code removes a worktree. A transaction
// with changes is parked: kept as it is, open or refused, and said so. One
// without changes is discarded. A path that is no transaction's workspace
// is left alone.
func (r *Runner) worktreeRemove(ctx context.Context, in *Input) error {
	if in.WorktreePath == "" {
		return errors.New("WorktreeRemove input has no worktree_path")
	}
	tx, err := r.byWorkspace(in.WorktreePath)
	if err != nil {
		return err
	}
	if tx == nil {
		fmt.Fprintf(r.Err, "airlock: %s is not the workspace of an airlock transaction; left as it is\n", in.WorktreePath)
		return nil
	}
	status, err := tx.Status()
	if err != nil {
		return err
	}
	switch {
	case status.Settled():
		fmt.Fprintf(r.Err, "airlock: transaction %s is already %s; nothing to remove\n", tx.ID(), status)
		return nil
	case status == airlock.StatusInterrupted:
		fmt.Fprintf(r.Err, "airlock: parked transaction %s: an apply of it was interrupted; run `airlock recover --workdir %s`\n", tx.ID(), tx.Base())
		return nil
	}
	cs, err := tx.Changes(ctx)
	if err != nil {
		fmt.Fprintf(r.Err, "airlock: parked transaction %s: its changes cannot be read (%v), so nothing was discarded; see `airlock show %s`\n", tx.ID(), err, tx.ID())
		return nil
	}
	a, m, d := cs.Counts()
	if cs.Empty() {
		res, err := tx.Discard(ctx, airlock.DiscardOptions{})
		if err != nil {
			return err
		}
		fmt.Fprintf(r.Err, "airlock: discarded transaction %s: it had no changes (receipt %s)\n", tx.ID(), res.ReceiptPath)
		return nil
	}
	fmt.Fprintf(r.Err, "airlock: parked transaction %s (%s) with its changes: %d added, %d modified, %d deleted; nothing was discarded.\n"+
		"airlock: review it with `airlock diff %s` or `airlock review %s`; land it with `airlock commit %s`; drop it with `airlock discard %s`\n",
		tx.ID(), status, a, m, d, tx.ID(), tx.ID(), tx.ID(), tx.ID())
	return nil
}
