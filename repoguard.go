package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/airlockdev/airlock/internal/repoguard"
	"github.com/airlockdev/airlock/internal/stage"
)

// repoGuardFile, in a worktree transaction's state, fingerprints what its
// worktree shares with the base's repository and what would make the
// user's own git run code or behave otherwise: the common git directory's
// config (and the per-worktree config files) and hooks. A git worktree cannot be isolated from them (docs/backends.md,
// Git worktrees); what can be done is to notice that the command changed
// them, refuse its commit, and say so at any settle.
const repoGuardFile = "repoguard.json"

// guardRepo records the fingerprint of a worktree transaction's shared
// repository at open.
func (t *Tx) guardRepo(ctx context.Context) error {
	if t.rec.Backend != stage.Worktree {
		return nil
	}
	g, err := repoguard.Take(ctx, t.Base())
	if err != nil {
		return fmt.Errorf("fingerprint the repository of %s: %w", t.Base(), err)
	}
	return t.st.Write(repoGuardFile, g)
}

// repoChanged lists what of the shared repository changed since open
// (its config, its hooks), for a worktree transaction; nil otherwise.
func (t *Tx) repoChanged(ctx context.Context) ([]string, error) {
	if t.rec.Backend != stage.Worktree {
		return nil, nil
	}
	var was repoguard.Fingerprint
	if err := t.st.Read(repoGuardFile, &was); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // opened by an airlock that kept none
		}
		return nil, err
	}
	return was.Changed()
}

// repoRefusal refuses a commit of a worktree transaction whose command
// changed the shared repository's config or hooks.
func (t *Tx) repoRefusal(ctx context.Context) (*Refusal, error) {
	changed, err := t.repoChanged(ctx)
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	return refuse(BoundaryEscape, nil, "the repository this worktree shares with the base changed since the transaction opened (%s): git run in the worktree reaches the base's own config and hooks, which no commit can take back; look at them (a hook or an alias there runs as you with your next git command), restore them, and commit again, or discard", strings.Join(changed, ", ")), nil
}

// branchMoved says, for a worktree transaction, whether the branch the
// base had checked out at open names another commit now: not refused (you
// may commit in the base while the transaction is open), but said, since
// the command shares refs with the base and could have moved it.
func (t *Tx) branchMoved(ctx context.Context) string {
	if t.rec.Backend != stage.Worktree {
		return ""
	}
	var was repoguard.Fingerprint
	if err := t.st.Read(repoGuardFile, &was); err != nil {
		return ""
	}
	now := was.BranchMoved(ctx, t.Base())
	if now == "" {
		return ""
	}
	return fmt.Sprintf("%s moved from %s to %s while the transaction was open; the worktree shares refs with the base: if you did not move it, the command did (see git reflog %s)", strings.TrimPrefix(was.Branch, "refs/heads/"), was.Head, now, strings.TrimPrefix(was.Branch, "refs/heads/"))
}
