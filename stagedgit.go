package airlock

import (
	"context"

	"github.com/airlockdev/airlock/internal/stage"
)

// scrubStagedGit takes the credentials out of the staged copy of the
// base's .git (stage.ScrubGit: its config files, a credential store kept
// there, reflogs): an agent works in the staged tree and needs no token
// to push, and a landing authenticates from the base's own configuration.
// The staged manifest is brought up to what the scrub changed, so that
// nothing later takes it for the agent's.
func scrubStagedGit(ctx context.Context, res *stage.Result, staged, base string) error {
	done, err := stage.ScrubGit(ctx, staged, base)
	if err != nil || !done.Changed() {
		return err
	}
	if err := done.Remeasure(res.Staged, staged); err != nil {
		return err
	}
	// A pooled tree's manifest file holds the entries as they were.
	res.StagedFile = ""
	return nil
}
