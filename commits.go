package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlockdev/airlock/internal/keepcommits"
	"github.com/airlockdev/airlock/internal/stage"
)

// A copy, reflink or overlay transaction over the top of a git work tree
// stages a copy of its .git too, so that git works in the staged tree; but
// nothing under .git is ever applied, so the commits an agent makes there
// (Claude Code and aider commit by habit) would go with the staged tree.
// keepCommits keeps them as the worktree backend keeps its own: the
// commits the staged repository has and the base's does not are fetched
// into the base's repository as branch airlock/<id>. Only objects and that
// one ref are written: the base's HEAD, index, working tree and other refs
// are not touched.
//
// The staged repository is the agent's: it is only read, by git's own
// upload-pack (`git fetch` from a local path), the way git reads any
// repository it fetches from; no command runs inside it.

// keptCommits is what keepCommits did: the branch it wrote, and what it
// could not keep.
type keptCommits struct {
	branch   *Branch
	warnings []string
}

// keepCommits fetches the staged repository's new commits into the base's
// repository. It never fails the settle: what it cannot do is a warning.
// changed says the staged .git may have changed (the change set counts
// paths under .git, or could not be measured).
func (t *Tx) keepCommits(ctx context.Context, changed bool) *keptCommits {
	if t.rec.Backend == stage.Worktree || !changed {
		return nil
	}
	baseGit := filepath.Join(t.Base(), ".git")
	stagedGit := filepath.Join(t.Path(), ".git")
	for _, p := range []string{baseGit, stagedGit} {
		// A .git file (a linked worktree or a submodule of the base)
		// points to a repository both trees share; a symlink could point
		// anywhere. Only a repository of the base's own is kept into.
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return nil
		}
	}
	if why := keepcommits.Unsafe(ctx, baseGit, stagedGit, t.walked); why != "" {
		return &keptCommits{warnings: []string{fmt.Sprintf("the commits made in the staged repository %s were not kept in %s: %s; they go with the staged workspace", stagedGit, baseGit, why)}}
	}
	// git reads what the command left in the staged repository: bounded,
	// so that nothing there can hold the settle.
	ctx, cancel := context.WithTimeout(ctx, keepcommits.Timeout)
	defer cancel()
	kept, err := keepcommits.Fetch(ctx, baseGit, stagedGit, "airlock/"+t.ID())
	if err != nil {
		return &keptCommits{warnings: []string{fmt.Sprintf("the commits made in the staged repository %s could not be kept in %s (%v); they go with the staged workspace", stagedGit, baseGit, err)}}
	}
	if kept == nil {
		return nil
	}
	out := &keptCommits{warnings: kept.Warnings}
	if kept.Branch != "" {
		out.branch = &Branch{Name: kept.Branch, Head: kept.Head, Kept: true}
	}
	return out
}

// noteBranch sets the result's Branch where the settle itself did not: a
// worktree transaction's branch, once its worktree is gone and the branch
// kept, and the branch of a settle repeated.
func (t *Tx) noteBranch(ctx context.Context, res *Result) {
	if res.Branch != nil || res.Outcome == Refused {
		return
	}
	if b, err := t.Branch(ctx); err == nil && b != nil && b.Kept {
		res.Branch = b
	}
}

// settledBranch is the branch a settled copy, reflink or overlay
// transaction kept its staged repository's commits on, from its receipt;
// nil when it kept none.
func (t *Tx) settledBranch() (*Branch, error) {
	st, err := t.Status()
	if err != nil || !st.Settled() {
		return nil, err
	}
	rc, err := t.Receipt()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if rc.Branch == "" {
		return nil, nil
	}
	return &Branch{Name: rc.Branch, Head: rc.BranchHead, Kept: true}, nil
}
