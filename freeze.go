package airlock

import (
	"errors"
	"io"
	"os"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/stage"
)

// contentDir is the directory beneath which a change's staged bytes are
// read: the directory the change set measured them in. For most backends
// that is the staged workspace; the overlay measures its upper layer.
func (t *Tx) contentDir() string {
	if b, err := stage.Get(t.rec.Backend); err == nil {
		if c, ok := b.(stage.ContentDirer); ok {
			return c.ContentDir(t.Path())
		}
	}
	return t.Path()
}

// stagedChanged turns the freeze's report of a staged file that moved
// under it into the refusal: the agent is still writing, and can stop and
// commit again.
func stagedChanged(err error) (*Refusal, bool) {
	var sc *changeset.StagedChangedError
	if !errors.As(err, &sc) {
		return nil, false
	}
	return refuse(StagedChanged, []string{sc.Path},
		"the staged file %s since the change set was computed, while the commit was reading the workspace (nothing in its place was read); stop whatever is still writing in the workspace and commit again", sc.What), true
}

// openStaged opens the staged file that the entry e measured at rel, as the
// freeze does: beneath the staged tree, through no symlink, a regular file
// and that very file; at most its measured size is read.
func (t *Tx) openStaged(rel string, e manifest.Entry) (io.ReadCloser, error) {
	root, err := safefs.OpenRoot(t.contentDir())
	if err != nil {
		return nil, err
	}
	defer root.Close()
	e.Path = rel
	f, err := changeset.OpenStaged(root, e)
	if err != nil {
		return nil, err
	}
	return limitedFile{io.LimitReader(f, e.Size), f}, nil
}

type limitedFile struct {
	io.Reader
	f *os.File
}

func (l limitedFile) Close() error { return l.f.Close() }
