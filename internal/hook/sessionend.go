package hook

import (
	"context"
	"fmt"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// sessionEnd settles the session's transaction when Claude Code ends the
// session: the one its WorktreeCreate opened, recorded with its session_id. A headless `claude -p --worktree NAME` never fires
// WorktreeRemove, so without this every run would leave an open
// transaction behind, its owner gone, with its staged copy. The policy is
// the stop hook's (`[hooks] stop` in .airlock.toml, recorded at open):
// commit commits; check and off park a transaction with changes, for
// `airlock review`, as WorktreeRemove does. A transaction without changes
// is discarded (commits made in its staged repository are kept on its
// branch, as every discard keeps them).
//
// SessionEnd cannot stop the session; its output only reaches the debug
// log, so everything is said on stderr.
func (r *Runner) sessionEnd(ctx context.Context, in *Input) error {
	switch in.Reason {
	case "clear", "resume":
		// The same Claude Code process goes on in the same directory with
		// another session: the workspace is still in use.
		return nil
	}
	tx, err := r.find(in.Cwd)
	if err != nil || tx == nil {
		return err
	}
	if s := tx.Record().Session; s == "" || s != in.SessionID {
		// Only the session that opened it (WorktreeCreate) ends it: a
		// nested `claude -p` in the workspace, or a second session in the
		// same directory, ending is not this one ending. A transaction
		// opened by hand is settled by hand.
		return nil
	}
	if r.getenv("AIRLOCK_TX") == tx.ID() {
		// Under `airlock run` the run settles its transaction when its
		// command exits.
		return nil
	}
	status, err := tx.Status()
	if err != nil {
		return err
	}
	if status == airlock.StatusInterrupted {
		fmt.Fprintf(r.Err, "airlock: parked transaction %s: an apply of it was interrupted; run `airlock recover --workdir %s`\n", tx.ID(), tx.Base())
		return nil
	}
	cs, err := tx.Changes(ctx)
	if err != nil {
		fmt.Fprintf(r.Err, "airlock: parked transaction %s: its changes cannot be read (%v), so nothing was discarded; see `airlock show %s`\n", tx.ID(), err, tx.ID())
		return nil
	}
	if cs.Empty() {
		res, err := tx.Discard(ctx, airlock.DiscardOptions{})
		if err != nil {
			return err
		}
		fmt.Fprintf(r.Err, "airlock: discarded transaction %s at the session's end: it had no changes (receipt %s)\n", tx.ID(), res.ReceiptPath)
		r.warn(res)
		return nil
	}
	a, m, d := cs.Counts()
	if tx.Record().StopHook == "commit" {
		res, err := tx.Commit(ctx, airlock.CommitOptions{})
		if ref, ok := asRefusal(err); ok {
			fmt.Fprintf(r.Err, "airlock: parked transaction %s at the session's end: its commit was refused (%s): %s\n", tx.ID(), ref.Kind, commandline.Explain(ref))
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(r.Err, "airlock: transaction %s %s at the session's end: %d added, %d modified, %d deleted in %s (receipt %s)\n",
			tx.ID(), res.Outcome, res.Added, res.Modified, res.Deleted, tx.Base(), res.ReceiptPath)
		r.warn(res)
		return nil
	}
	fmt.Fprintf(r.Err, "airlock: parked transaction %s (%s) at the session's end with its changes: %d added, %d modified, %d deleted; nothing was discarded.\n"+
		"airlock: review it with `airlock diff %s` or `airlock review %s`; land it with `airlock commit %s`; drop it with `airlock discard %s`\n",
		tx.ID(), status, a, m, d, tx.ID(), tx.ID(), tx.ID(), tx.ID())
	return nil
}

// warn says what a settle kept or could not do after its outcome.
func (r *Runner) warn(res *airlock.Result) {
	if n := res.Branch.KeptNote(); n != "" {
		fmt.Fprintf(r.Err, "airlock: %s\n", n)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(r.Err, "airlock: warning: %s\n", w)
	}
}
