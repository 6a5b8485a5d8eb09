package cli

import (
	"context"
	"fmt"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/stage"
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

// worktreeOff reports (and says once) that run does not use same-path mode
// for a worktree transaction: git in the staged worktree reads the
// repository through the base's path, which the bind mount would hide (a
// base at the repository's top) or stand in for with the base's own
// repository (a base in a subdirectory).
func worktreeOff(io IO, tx *airlock.Tx, quiet bool) bool {
	if tx.Record().Backend != stage.Worktree {
		return false
	}
	if quiet {
		return true
	}
	fmt.Fprintf(io.Err, "airlock: same-path mode is off for --backend worktree (git in the staged worktree reaches its repository through the base's path); running at %s\n", tx.Path())
	return true
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
