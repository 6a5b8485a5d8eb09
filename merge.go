package airlock

import (
	"context"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/safefs"
)

// mergeDrifted refuses every changed path that also moved in the base since
// open: without a three-way merge, nothing drifted can be applied safely.
func (t *Tx) mergeDrifted(_ context.Context, _ *safefs.Root, _ *changeset.Set, drifted []drift) ([]journal.Op, *changeset.Set, *Refusal, error) {
	paths := make([]string, len(drifted))
	for i, d := range drifted {
		paths[i] = d.change.Path
	}
	return nil, nil, refuse(BaseDrift, paths, "changed in the base since the transaction opened"), nil
}
