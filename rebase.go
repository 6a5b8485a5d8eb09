package airlock

import (
	"fmt"

	"github.com/airlockdev/airlock/internal/basecheck"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// rebaseOpen is called after a restore has proved every journaled path back
// to its state before the apply. A restore brings back bytes, modes and
// symlink targets, but not inodes and times; without this step every
// restored path would read as drift against the base manifest at open, and
// the transaction, though kept to be committed again, never could be.
//
// Only a path whose state before the apply was its state at open is
// rebased: its restored content is that same content, proved by the
// restore. A path that had drifted before the apply (and was merged) keeps
// its open entry, so the drift is still seen.
//
// A part's manifests are copies of its whole's, which stays open over the
// restored paths: the whole is rebased too.
func (t *Tx) rebaseOpen(root *safefs.Root, ops []journal.Op) error {
	if t.part != nil {
		if err := t.part.whole.rebaseOpen(root, ops); err != nil {
			return err
		}
	}
	t.opened = nil
	path := t.st.Path(baseManifestFile)
	m, err := t.loadManifest(baseManifestFile)
	if err != nil {
		return err
	}
	changed := false
	for _, op := range ops {
		if op.Before.Kind == manifest.KindNone {
			continue
		}
		e, ok := m.Lookup(op.Path)
		if !ok || !basecheck.Unchanged(op.Before, *e) {
			continue
		}
		cur, err := basecheck.Measure(root, op.Path)
		if err != nil {
			return err
		}
		if cur.Kind != e.Kind {
			return fmt.Errorf("rebase %s after the restore: it is a %s, not the %s the restore proved", op.Path, cur.Kind, e.Kind)
		}
		// The restore just wrote it: its stat facts are too fresh to prove
		// that nothing wrote it again within the same timestamp step, so a
		// file keeps the digest of the bytes the restore proved, and the
		// next commit's drift check compares bytes (see basecheck.Drift).
		digest := e.Digest
		if cur.Kind == manifest.KindFile && op.Before.Digest != "" {
			digest = op.Before.Digest
		}
		*e = cur
		e.Path, e.Digest = op.Path, digest
		changed = true
	}
	if !changed {
		return nil
	}
	return m.Save(path)
}
