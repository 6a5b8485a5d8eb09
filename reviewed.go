package airlock

import (
	"context"
	"fmt"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
)

// ChangeDigest is the digest of the change set as it is now in the staged
// workspace: the diff_digest a commit made now would record. A caller that
// shows a change set to a person (the review page, `airlock show --json`)
// hands it back as SettleOptions.ExpectDiffDigest, so that what lands is
// what was reviewed.
func (t *Tx) ChangeDigest(ctx context.Context) (string, error) {
	set, err := t.diff(ctx)
	if err != nil {
		return "", err
	}
	// The digest covers each file's content, which the freeze hashes: here
	// it is hashed the same way, from the same safe read.
	for i := range set.Changes {
		c := &set.Changes[i]
		if c.Result.Kind != manifest.KindFile {
			continue
		}
		f, err := t.openStaged(c.Path, c.Result)
		if err != nil {
			return "", fmt.Errorf("transaction %s: read staged %s: %w", t.ID(), c.Path, err)
		}
		c.Result.Digest, err = manifest.HashReader(f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("transaction %s: read staged %s: %w", t.ID(), c.Path, err)
		}
	}
	return set.Digest(), nil
}

// checkReviewed refuses a commit whose frozen change set is not the one the
// caller reviewed (SettleOptions.ExpectDiffDigest). It runs under the
// transaction's lock, on the frozen set: the bytes compared are the bytes
// that would land.
func checkReviewed(set *changeset.Set, o SettleOptions) *Refusal {
	if o.ExpectDiffDigest == "" {
		return nil
	}
	if d := set.Digest(); d != o.ExpectDiffDigest {
		return refuse(ReviewStale, nil, "the change set changed since it was reviewed (reviewed %s, now %s): review it again (airlock diff, airlock show --json, or reload the review page) and commit the digest you reviewed", o.ExpectDiffDigest, d)
	}
	return nil
}

// InfoWithDigest is Info with DiffDigest set: for a transaction not yet
// settled, the digest of its change set now (ChangeDigest), which a commit
// can be bound to; for a settled one, its receipt's.
func (t *Tx) InfoWithDigest(ctx context.Context) (*Info, error) {
	in, err := t.Info(ctx)
	if err != nil {
		return nil, err
	}
	if in.Status.Settled() {
		if rc, err := t.Receipt(); err == nil {
			in.DiffDigest = rc.DiffDigest
		}
		return in, nil
	}
	if d, err := t.ChangeDigest(ctx); err == nil {
		in.DiffDigest = d
	}
	return in, nil
}
