package cli

import (
	"context"
	"fmt"

	"github.com/airlockdev/airlock"
)

// noteBranch says on stderr that a settled worktree transaction's branch
// was kept, so that nobody believes the command's commits were lost.
func noteBranch(ctx context.Context, io IO, tx *airlock.Tx) {
	b, err := tx.Branch(ctx)
	if err != nil {
		fmt.Fprintf(io.Err, "airlock: warning: cannot tell what became of the transaction's git branch: %v\n", err)
		return
	}
	if n := b.KeptNote(); n != "" {
		fmt.Fprintf(io.Err, "airlock: %s\n", n)
	}
}

// branchLine is show's line for a worktree transaction's branch.
func branchLine(in *airlock.Info) string {
	switch {
	case in.BranchHead == "":
		return in.Branch + " (gone: a branch that holds nothing new is deleted with its worktree)"
	case in.BranchKept:
		return in.Branch + " at " + in.BranchHead + " (kept: it holds commits no other ref contains)"
	}
	return in.Branch + " at " + in.BranchHead
}
