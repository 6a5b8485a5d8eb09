package airlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/patch"
	"github.com/airlockdev/airlock/internal/safefs"
)

// DiffFormat selects what Diff writes.
type DiffFormat int

const (
	DiffPatch      DiffFormat = iota // a git-style patch, binary-aware, that `git apply --binary` accepts
	DiffStat                         // like `git diff --stat`
	DiffNameStatus                   // like `git diff --name-status`
)

// Diff writes the transaction's change set. For a transaction not yet
// settled it is the staged workspace against the base as it was at open;
// for a committed one, what the commit applied (where the commit moved its
// frozen copy of a file into the base, its content is read from the base
// while the base still holds it, else from the originals a later commit
// kept; failing both, Diff says it is no longer kept). It returns notes on
// what a git patch cannot carry (directories, permission bits other than
// x).
func (t *Tx) Diff(ctx context.Context, w io.Writer, format DiffFormat) (_ []string, err error) {
	defer exported(&err)
	files, err := t.patchFiles(ctx)
	if err != nil {
		return nil, err
	}
	return writePatch(w, files, format)
}

// writePatch writes files in format and returns the notes on what a git
// patch cannot carry.
func writePatch(w io.Writer, files []patch.File, format DiffFormat) (_ []string, err error) {
	switch format {
	case DiffStat:
		err = patch.Stat(w, files)
	case DiffNameStatus:
		err = patch.NameStatus(w, files)
	default:
		err = patch.Write(w, files)
	}
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, g := range patch.Gaps(files) {
		notes = append(notes, fmt.Sprintf("%s: %s", g.Path, g.Reason))
	}
	return notes, nil
}

func (t *Tx) patchFiles(ctx context.Context) ([]patch.File, error) {
	st, err := t.Status()
	if err != nil {
		return nil, err
	}
	orig, err := t.originals()
	if err != nil {
		return nil, err
	}
	objects := t.st.Path(objectsDir)
	fromOriginals := func(d string) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return orig.Open(d) }
	}
	switch st {
	case StatusCommitted:
		j, err := t.readJournal(appliedFile)
		if err != nil {
			return nil, fmt.Errorf("transaction %s: what it applied is no longer recorded: %w", t.ID(), err)
		}
		files := make([]patch.File, len(j.Ops))
		for i, op := range j.Ops {
			files[i] = patch.File{Path: op.Path, Old: side(op.Before, fromOriginals(op.Before.Digest)), New: side(op.After, t.committed(objects, orig, op.Path, op.After.Digest))}
		}
		return files, nil
	case StatusDiscarded, StatusNoChanges:
		return nil, fmt.Errorf("transaction %s was %s: it has no change set to show", t.ID(), st)
	}
	set, err := t.diff(ctx)
	if err != nil {
		return nil, err
	}
	files := make([]patch.File, len(set.Changes))
	for i, c := range set.Changes {
		c := c
		old := func() (io.ReadCloser, error) { return t.openAtOpen(orig, c.Base) }
		staged := func() (io.ReadCloser, error) { return t.openStaged(c.Path, c.Result) }
		files[i] = patch.File{Path: c.Path, Old: side(c.Base, old), New: side(c.Result, staged)}
	}
	return files, nil
}

// committed opens the bytes a commit wrote to rel, with digest d: its
// frozen object where the commit copied it into the base; where the
// commit moved the object into the base instead (journal.Apply), the
// originals store's copy (kept when a later commit replaced the file), or
// the base file itself while it still holds those bytes.
func (t *Tx) committed(objects string, orig interface {
	Has(string) bool
	Open(string) (*os.File, error)
}, rel, d string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		f, err := os.Open(changeset.ObjectPath(objects, d))
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		if orig.Has(d) {
			return orig.Open(d)
		}
		p := filepath.Join(t.Base(), filepath.FromSlash(rel))
		if b, err := readBase(t.Base(), rel); err == nil && manifest.HashBytes(b) == d {
			return io.NopCloser(bytes.NewReader(b)), nil
		}
		return nil, fmt.Errorf("%s: the content this transaction committed there is no longer kept (its commit moved it into the base, which has changed it since)", p)
	}
}

// readBase reads the base file rel, beneath the base and through no
// symlink.
func readBase(base, rel string) ([]byte, error) {
	root, err := safefs.OpenRootNoFollow(base)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, _, err := root.OpenRegular(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// openAtOpen opens the bytes a base file held when the transaction opened:
// the base file itself while it is unchanged since, else the original an
// airlock commit kept when it replaced it.
func (t *Tx) openAtOpen(orig interface {
	Lookup(manifest.Entry) (string, bool)
	Open(string) (*os.File, error)
}, e manifest.Entry) (io.ReadCloser, error) {
	p := filepath.Join(t.Base(), filepath.FromSlash(e.Path))
	// Beneath the base, no symlink followed, and only the very file
	// measured at open: never a file outside the base, a FIFO or a device
	// swapped in on the way.
	if root, err := safefs.OpenRootNoFollow(t.Base()); err == nil {
		f, err := changeset.OpenOriginal(root, e)
		root.Close()
		if err == nil {
			return f, nil
		}
	}
	if d, ok := orig.Lookup(e); ok {
		return orig.Open(d)
	}
	// In a git repository, a path clean at open held HEAD's blob.
	if b, ok, err := t.headBlob(context.Background(), e); err == nil && ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	return nil, fmt.Errorf("%s changed in the base since the transaction opened, and its content at open was not kept (no airlock commit replaced it, and no clean git HEAD holds it)", p)
}

func side(e manifest.Entry, open func() (io.ReadCloser, error)) patch.Side {
	s := patch.Side{Kind: e.Kind, Mode: e.Mode, Target: e.Target}
	if e.Kind == manifest.KindFile {
		s.Open = open
	}
	return s
}
