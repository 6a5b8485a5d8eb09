package airlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/airlockdev/airlock/internal/basecheck"
	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/gitbase"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/merge"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/safefs"
)

// mergeDrifted tries to three-way merge each changed path that also moved
// in the base since open. Only a regular file modified on both sides, whose
// content at open is known (the originals an airlock commit replaced), can
// be merged; anything else refuses BaseDrift, and overlapping edits refuse
// MergeConflict. It returns the journal operations for the merged paths and
// the prepared change set, whose results hold the merged content, which is
// written to objects beside the frozen content it reads.
func (t *Tx) mergeDrifted(ctx context.Context, root *safefs.Root, objects string, set *changeset.Set, drifted []basecheck.Drifted) ([]journal.Op, *changeset.Set, *Refusal, error) {
	orig, err := t.originals()
	if err != nil {
		return nil, nil, nil, err
	}
	var ops []journal.Op
	var unmergeable, conflicts, excluded []string
	excl, err := project.NewSelector(t.rec.Exclude, string(t.rec.Under))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("exclude selectors in %s: %w", t.st.Path(recordFile), err)
	}
	results := map[string]manifest.Entry{}
	for _, d := range drifted {
		c := d.Change
		if c.Op != changeset.Modify || c.Base.Kind != manifest.KindFile || c.Result.Kind != manifest.KindFile || d.Now.Kind != manifest.KindFile {
			unmergeable = append(unmergeable, c.Path)
			if c.Op == changeset.Add && d.Now.Kind != manifest.KindNone && excl.Match(c.Path, c.Result.Kind == manifest.KindDir) {
				excluded = append(excluded, c.Path)
			}
			continue
		}
		anc, ok, err := t.ancestor(ctx, orig, c.Base)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read the merge base of %s: %w", c.Path, err)
		}
		if !ok {
			unmergeable = append(unmergeable, c.Path)
			continue
		}
		mode, ok := merge.Mode(c.Base.Mode, c.Result.Mode, d.Now.Mode)
		if !ok {
			conflicts = append(conflicts, c.Path)
			continue
		}
		ours, err := readAll(func() (io.ReadCloser, error) { return os.Open(changeset.ObjectPath(objects, c.Result.Digest)) })
		if err != nil {
			return nil, nil, nil, fmt.Errorf("read the frozen content of %s: %w", c.Path, err)
		}
		theirs, err := readAll(func() (io.ReadCloser, error) { return root.Open(c.Path) })
		if err != nil {
			return nil, nil, nil, err
		}
		content, how, err := mergeContent(anc, ours, theirs)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("merge %s: %w", c.Path, err)
		}
		switch how {
		case mergeImpossible:
			unmergeable = append(unmergeable, c.Path)
			continue
		case mergeConflict:
			conflicts = append(conflicts, c.Path)
			continue
		}
		digest, err := changeset.WriteObject(objects, content)
		if err != nil {
			return nil, nil, nil, err
		}
		after := c.Result
		after.Digest, after.Size, after.Mode = digest, int64(len(content)), mode
		// Before is the base as read for the merge: if it moves again
		// before the journal is written, the commit refuses. Its digest
		// holds the backup to these very bytes, which a same-size edit
		// in the timestamp step of the read could change unseen.
		before := d.Now
		before.Digest = manifest.HashBytes(theirs)
		ops = append(ops, journal.Op{Path: c.Path, Before: before, After: after})
		results[c.Path] = after
	}
	switch {
	case len(unmergeable) > 0 && len(excluded) == len(unmergeable):
		// Nothing moved: the paths were excluded from staging, so the
		// command did not see what the base holds there.
		return nil, nil, refuse(BaseDrift, append(unmergeable, conflicts...), "excluded from the staged workspace, and the base already holds them: what the command wrote there would overwrite what it never saw; remove those paths from the staged workspace %s, or stop excluding them", t.Path()), nil
	case len(unmergeable) > 0:
		return nil, nil, refuse(BaseDrift, append(unmergeable, conflicts...), "changed in the base since the transaction opened, and cannot be merged"), nil
	case len(conflicts) > 0:
		r := refuse(MergeConflict, conflicts, "changed in the base since the transaction opened, with edits that overlap the transaction's")
		r.Remedy = Remedy{Kind: RemedyRebase, Tx: t.ID()}
		return nil, nil, r, nil
	}
	prepared := set.Clone()
	for i, c := range prepared.Changes {
		if r, ok := results[c.Path]; ok {
			prepared.Changes[i].Result = r
		}
	}
	return ops, prepared, nil, nil
}

// mergeHow is how a three-way merge of one file's content went.
type mergeHow int

const (
	merged          mergeHow = iota // content is the result
	mergeImpossible                 // not text, or too costly to merge: BaseDrift
	mergeConflict                   // overlapping edits: MergeConflict
)

// mergeContent three-way merges one regular file: the commit's merge
// (mergeDrifted) and a landing's into a remote branch decide alike.
func mergeContent(anc, ours, theirs []byte) ([]byte, mergeHow, error) {
	switch {
	case bytes.Equal(theirs, anc), bytes.Equal(theirs, ours):
		return ours, merged, nil
	case bytes.Equal(ours, anc):
		return theirs, merged, nil
	case !merge.IsText(anc) || !merge.IsText(ours) || !merge.IsText(theirs):
		return nil, mergeImpossible, nil
	}
	m, clean, err := merge.Text(anc, ours, theirs)
	if errors.Is(err, merge.ErrTooCostly) || errors.Is(err, merge.ErrNotText) {
		return nil, mergeImpossible, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if !clean {
		return nil, mergeConflict, nil
	}
	return m, merged, nil
}

// ancestor finds the content a base file had at open: the original an
// airlock commit kept when it replaced the file (matched by its stat facts
// at open), else, in a git repository, HEAD's blob when the path was clean
// then.
func (t *Tx) ancestor(ctx context.Context, orig *originals.Store, open manifest.Entry) ([]byte, bool, error) {
	// Where open recorded the bytes' digest (stat could not tell them
	// apart from an edit in the same timestamp step), an ancestor found by
	// stat must have those bytes.
	if d, ok := orig.Lookup(open); ok && (open.Digest == "" || d == open.Digest) {
		b, err := readAll(func() (io.ReadCloser, error) { return orig.Open(d) })
		return b, err == nil, err
	}
	return t.headBlob(ctx, open)
}

// headBlob is, in a git repository, HEAD's blob of a path that was clean
// when the transaction opened (its git snapshot says so), where its size
// (and digest, where open recorded one) is the file's at open: the file's
// content at open. ok is false where it cannot be told.
func (t *Tx) headBlob(ctx context.Context, open manifest.Entry) ([]byte, bool, error) {
	var snap gitbase.Snapshot
	if err := t.st.Read(gitFile, &snap); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if !snap.Clean(open.Path) {
		return nil, false, nil
	}
	b, ok, err := snap.Blob(ctx, t.Base(), open.Path)
	if err != nil || !ok || int64(len(b)) != open.Size || (open.Digest != "" && manifest.HashBytes(b) != open.Digest) {
		// A blob whose size (or digest) is not the file's at open was not
		// its content (a clean/smudge filter or line-ending conversion):
		// no ancestor.
		return nil, false, err
	}
	return b, true, nil
}

func readAll(open func() (io.ReadCloser, error)) ([]byte, error) {
	f, err := open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
