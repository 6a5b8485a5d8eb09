package airlock

import (
	"errors"
	"sort"

	"github.com/airlockdev/airlock/internal/basecheck"
	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// A receipt's base_digest and result_digest cover exactly the paths its
// change set touches: the tree digest (manifest.TreeDigest) of what the
// base held at those paths before the commit, and of what it holds after.
// That keeps a commit's cost proportional to its change set, and it is the
// same digest recover proves a rollback with. Paths outside the change set
// are not the transaction's to vouch for.

// opsDigests returns the digests of a journal's paths before and after.
// Prepare filled each overwritten file's Before digest from its backup,
// and each After digest names frozen content, so nothing is read again.
func opsDigests(ops []journal.Op) (before, after string, err error) {
	b := make([]manifest.Entry, len(ops))
	a := make([]manifest.Entry, len(ops))
	for i, op := range ops {
		b[i], a[i] = op.Before, op.After
		b[i].Path, a[i].Path = op.Path, op.Path
	}
	if before, err = entriesDigest(b); err != nil {
		return "", "", err
	}
	after, err = entriesDigest(a)
	return before, after, err
}

// keptDigest is the after digest when deleted directories were kept
// because they held paths the transaction never knew about.
func keptDigest(root *safefs.Root, ops []journal.Op, kept []string) (string, error) {
	k := map[string]bool{}
	for _, p := range kept {
		k[p] = true
	}
	a := make([]manifest.Entry, len(ops))
	for i, op := range ops {
		a[i] = op.After
		if k[op.Path] {
			a[i] = op.Before
		}
		a[i].Path = op.Path
	}
	return entriesDigest(a)
}

func entriesDigest(es []manifest.Entry) (string, error) {
	sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
	return manifest.TreeDigest(es, func(e *manifest.Entry) (string, error) {
		if e.Digest == "" {
			return "", errors.New("internal: no content digest for " + e.Path)
		}
		return e.Digest, nil
	})
}

// touchedDigest measures the base now at every path the change set
// touches, for the receipt of a settle that leaves the base as it is.
func (t *Tx) touchedDigest(set *changeset.Set) (string, error) {
	if len(set.Changes) == 0 {
		return entriesDigest(nil)
	}
	var es []manifest.Entry
	root, err := safefs.OpenRootNoFollow(t.Base())
	if err != nil {
		// The base's path no longer leads to a directory without a
		// symlink on the way (the refusal says so): nothing there is this
		// transaction's to vouch for, and nothing is read through it.
		return entriesDigest(es)
	}
	defer root.Close()
	for _, c := range set.Changes {
		if safefs.CheckRel(c.Path) != nil {
			continue // never read a path the boundary check refuses
		}
		e, err := basecheck.Measure(root, c.Path)
		if err != nil {
			// Unreachable (behind a symlink) or unreadable: not part of
			// what this transaction can vouch for.
			continue
		}
		if e.Kind == manifest.KindFile {
			f, err := root.Open(c.Path)
			if err != nil {
				continue
			}
			e.Digest, err = manifest.HashReader(f)
			f.Close()
			if err != nil {
				return "", err
			}
		}
		es = append(es, e)
	}
	return entriesDigest(es)
}
