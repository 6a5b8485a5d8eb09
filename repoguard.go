package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/repoguard"
	"github.com/airlockdev/airlock/internal/stage"
)

// repoGuardFile, in the state of a transaction whose staged tree shares
// the base's repository, fingerprints what it shares and what would make
// the user's own git run code or behave otherwise: the common git
// directory's config (and the per-worktree config files) and hooks. Such a
// tree cannot be isolated from them (docs/backends.md, Git worktrees);
// what can be done is to notice that the command changed them, refuse its
// commit, and say so at any settle. A transaction that kept none shares
// nothing.
const repoGuardFile = "repoguard.json"

// sharesRepo reports whether the transaction's staged tree reaches the
// base's own repository: a worktree does, and so does a copy whose .git
// is a file (a base that is a linked worktree or a submodule: the copied
// gitfile points at the repository the base's git uses, so git in the
// staged tree reads and writes its config and hooks).
func (t *Tx) sharesRepo() bool {
	if t.rec.Backend == stage.Worktree {
		return true
	}
	fi, err := os.Lstat(filepath.Join(t.Path(), ".git"))
	return err == nil && fi.Mode().IsRegular()
}

// guardRepo records, at open, the fingerprint of the repository a
// transaction's staged tree shares with the base, if it shares one.
func (t *Tx) guardRepo(ctx context.Context) error {
	if !t.sharesRepo() {
		return nil
	}
	g, err := repoguard.Take(ctx, t.Base())
	if err != nil {
		if t.rec.Backend != stage.Worktree {
			// A .git file that leads git to no repository (one copied
			// from elsewhere, its target gone) shares nothing: git in
			// the staged tree fails as it does in the base.
			return nil
		}
		return fmt.Errorf("fingerprint the repository of %s: %w", t.Base(), err)
	}
	return t.st.Write(repoGuardFile, g)
}

// repoChanged lists what of the shared repository changed since open
// (its config, its hooks), for a transaction whose staged tree shares
// it; nil otherwise.
func (t *Tx) repoChanged(ctx context.Context) ([]string, error) {
	var was repoguard.Fingerprint
	if err := t.st.Read(repoGuardFile, &was); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // shares nothing, or opened by an airlock that kept none
		}
		return nil, err
	}
	return was.Changed()
}

// repoRefusal refuses a commit of a transaction whose command changed
// the repository its staged tree shares with the base (config or hooks).
func (t *Tx) repoRefusal(ctx context.Context) (*Refusal, error) {
	changed, err := t.repoChanged(ctx)
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	return refuse(BoundaryEscape, nil, "the repository the staged tree shares with the base changed since the transaction opened (%s): git run in %s reaches the base's own config and hooks, which no commit can take back; look at them (a hook or an alias there runs as you with your next git command, a credential helper with your next fetch), restore them, and commit again, or discard", strings.Join(changed, ", "), t.sharedHow()), nil
}

// sharedHow names how the staged tree shares the base's repository, for
// messages.
func (t *Tx) sharedHow() string {
	if t.rec.Backend == stage.Worktree {
		return "the worktree"
	}
	return "the staged tree (its .git is a copy of the base's .git file, which points at the base's repository)"
}

// branchMoved says, for a transaction whose staged tree shares the base's
// repository, whether the branch the base had checked out at open names
// another commit now: not refused (you may commit in the base while the
// transaction is open), but said, since the command shares refs with the
// base and could have moved it.
func (t *Tx) branchMoved(ctx context.Context) string {
	var was repoguard.Fingerprint
	if err := t.st.Read(repoGuardFile, &was); err != nil {
		return ""
	}
	now := was.BranchMoved(ctx, t.Base())
	if now == "" {
		return ""
	}
	return fmt.Sprintf("%s moved from %s to %s while the transaction was open; the staged tree shares refs with the base: if you did not move it, the command did (see git reflog %s)", strings.TrimPrefix(was.Branch, "refs/heads/"), was.Head, now, strings.TrimPrefix(was.Branch, "refs/heads/"))
}
