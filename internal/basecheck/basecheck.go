package basecheck

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// Drifted is a changed path that also changed in the base since open.
type Drifted struct {
	Change changeset.Change
	Now    manifest.Entry // the base path as it is now
}

// Drift compares every path the change set touches, and each of its
// parent directories, with the base as it was at open: by stat, and by
// bytes where open recorded a digest because stat could not prove the
// file unchanged. It returns the journal operations for the paths that did
// not move, with Before set to what is in the base now (its digest too,
// where the bytes were compared); the paths that moved, for merging; and
// the paths that cannot be reached without crossing a symlink or leaving
// the base, for the boundary check.
func Drift(root *safefs.Root, set *changeset.Set) ([]journal.Op, []Drifted, []string, error) {
	var ops []journal.Op
	var drifted []Drifted
	var escapes []string
	parentOK := map[string]bool{}
	known := map[string]manifest.Entry{}
	kinds := map[string]manifest.Kind{}
	for _, c := range set.Changes {
		known[c.Path] = c.Base
		kinds[c.Path] = c.Base.Kind
	}
	for _, c := range set.Changes {
		if safefs.CheckRel(c.Path) != nil || manifest.IsGitMeta(c.Path) {
			escapes = append(escapes, c.Path)
			continue
		}
		cur, err := Measure(root, c.Path)
		if errors.Is(err, safefs.ErrSymlink) && c.Base.Kind == manifest.KindNone && journal.Shadowed(c.Path, kinds) {
			// Beneath a symlink the change set replaces by a directory:
			// absent now, created once that symlink is gone.
			cur, err = manifest.Entry{Path: c.Path}, nil
		}
		if errors.Is(err, safefs.ErrSymlink) || errors.Is(err, safefs.ErrEscape) {
			escapes = append(escapes, c.Path)
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if !parentsUnchanged(root, c.Path, known, parentOK) {
			drifted = append(drifted, Drifted{Change: c, Now: manifest.Entry{Path: c.Path, Kind: manifest.KindOther}})
			continue
		}
		if !Unchanged(cur, c.Base) {
			drifted = append(drifted, Drifted{Change: c, Now: cur})
			continue
		}
		if c.Base.Kind == manifest.KindFile && c.Base.Digest != "" {
			// Measured at open within a timestamp step of its last change
			// (stage.Result.Base): an edit in that same step, keeping the
			// size, leaves every stat fact as it was. The bytes decide,
			// and the journal's backup must be those bytes.
			f, err := changeset.OpenOriginal(root, c.Base)
			if err != nil {
				drifted = append(drifted, Drifted{Change: c, Now: cur})
				continue
			}
			f.Close()
			cur.Digest = c.Base.Digest
		}
		ops = append(ops, journal.Op{Path: c.Path, Before: cur, After: c.Result})
	}
	return ops, drifted, escapes, nil
}

// Unchanged compares a base path now with the base at open. A directory is
// the same while it is a directory with the same mode and inode: its times
// move whenever anything inside it changes, which is not drift of the
// directory itself.
func Unchanged(cur, open manifest.Entry) bool {
	if cur.Kind != open.Kind {
		return false
	}
	switch cur.Kind {
	case manifest.KindNone:
		return true
	case manifest.KindDir:
		return cur.Mode == open.Mode && cur.Ino == open.Ino && cur.Dev == open.Dev
	}
	return manifest.SameStat(cur, open)
}

// parentsUnchanged checks that each parent directory of rel that existed at
// open is still a directory. Parents the change set adds are checked as
// changes of their own.
func parentsUnchanged(root *safefs.Root, rel string, known map[string]manifest.Entry, ok map[string]bool) bool {
	for p := parentOf(rel); p != ""; p = parentOf(p) {
		if ok[p] {
			return true
		}
		if e, changed := known[p]; changed && e.Kind != manifest.KindDir {
			ok[p] = true // added or retyped by the change set
			continue
		}
		cur, err := Measure(root, p)
		if err != nil || cur.Kind != manifest.KindDir {
			return false
		}
		ok[p] = true
	}
	return true
}

func parentOf(rel string) string {
	d := filepath.Dir(rel)
	if d == "." {
		return ""
	}
	return filepath.ToSlash(d)
}

// Measure is the entry of the base path rel as it is now (KindNone when
// absent, or beneath a parent that is not a directory), its digest unset.
func Measure(root *safefs.Root, rel string) (manifest.Entry, error) {
	info, err := root.Lstat(rel)
	// ENOTDIR: a parent is not a directory (yet), as when the change set
	// turns a file into a directory with children; the path is absent.
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return manifest.Entry{Path: rel}, nil
	}
	if err != nil {
		return manifest.Entry{}, err
	}
	e := manifest.Entry{Path: rel, Kind: manifest.KindOf(info.Mode), Mode: info.Mode & manifest.ModeMask,
		Size: info.Size, MtimeNs: info.MtimeNs, CtimeNs: info.CtimeNs, Ino: info.Ino, Dev: info.Dev}
	if e.Kind != manifest.KindFile {
		e.Size = 0
	}
	if e.Kind == manifest.KindSymlink {
		if e.Target, err = root.Readlink(rel); err != nil {
			return manifest.Entry{}, err
		}
	}
	return e, nil
}

// Boundary lists the changed paths that are not plain relative paths
// inside the base or would be reached through a symlink in the base
// (escapes, from Drift), and those beneath a symlink the change set itself
// creates.
func Boundary(set *changeset.Set, escapes []string) []string {
	bad := append([]string(nil), escapes...)
	links := map[string]bool{}
	for _, c := range set.Changes {
		if c.Result.Kind == manifest.KindSymlink {
			links[c.Path] = true
		}
	}
	for _, c := range set.Changes {
		if c.Op == changeset.Delete {
			// Removed before anything is created: a directory the change
			// set replaces by a symlink is emptied while it is still one.
			continue
		}
		for p := parentOf(c.Path); p != "" && len(links) > 0; p = parentOf(p) {
			if links[p] {
				bad = append(bad, c.Path)
				break
			}
		}
	}
	return bad
}

// SharedInodes lists the changed files whose staged or frozen copy is the
// same inode as the base file: a write to one would already have changed
// the other.
func SharedInodes(root *safefs.Root, set *changeset.Set, staged, objects string) []string {
	var shared []string
	for _, c := range set.Changes {
		if c.Result.Kind != manifest.KindFile {
			continue
		}
		b, err := root.Lstat(c.Path)
		if err != nil {
			continue
		}
		for _, p := range []string{filepath.Join(staged, filepath.FromSlash(c.Path)), changeset.ObjectPath(objects, c.Result.Digest)} {
			e, err := manifest.Lstat(p)
			if err == nil && e.Ino == b.Ino && e.Dev == b.Dev {
				shared = append(shared, c.Path)
				break
			}
		}
	}
	return shared
}
