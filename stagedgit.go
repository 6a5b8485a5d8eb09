package airlock

import (
	"context"

	"github.com/airlockdev/airlock/internal/stage"
)

// scrubStagedGit takes the credentials out of the staged copy of the
// base's .git/config (stage.ScrubGitConfig): an agent works in the staged
// tree and needs no token to push, and a landing authenticates from the
// base's own configuration. The staged manifest is brought up to the
// rewritten file, so that nothing later takes the rewrite for the
// agent's.
func scrubStagedGit(ctx context.Context, res *stage.Result, staged string) error {
	changed, err := stage.ScrubGitConfig(ctx, staged)
	if err != nil || !changed {
		return err
	}
	if err := stage.RemeasureGitConfig(res.Staged, staged); err != nil {
		return err
	}
	// A pooled tree's manifest file holds the entry as it was.
	res.StagedFile = ""
	return nil
}
