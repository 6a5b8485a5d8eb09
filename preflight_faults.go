//go:build airlock_faults

package airlock

import (
	"context"

	"github.com/airlockdev/airlock/internal/changeset"
)

// testCheck, when a test sets it, is one more of stagedChecks, the last:
// a test adds a check to the one preflight and sees every way a change
// set lands refuse by it. It exists only in a build with the tag
// airlock_faults.
var testCheck func(set *changeset.Set) *Refusal

func init() {
	stagedChecks = append(stagedChecks, func(_ context.Context, _ *Tx, set *changeset.Set, _ CommitOptions) (*Refusal, error) {
		if testCheck == nil {
			return nil, nil
		}
		return testCheck(set), nil
	})
}
