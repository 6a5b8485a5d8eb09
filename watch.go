package airlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/selector"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/watch"
)

// Watching a run. The change set of a run is the staged tree against the
// base; measuring the tree after the command is a walk of every entry,
// though a command writes a handful of them. Where open stages a tree for
// a run (OpenOptions.ForRun), the command will be contained, and it can
// be kept from making a second name for a file, the tree is watched from
// the moment open has measured it (internal/watch) to the run's settling,
// and settling measures only what the watch names (manifest.Patch). Anything the watch cannot account for,
// and AIRLOCK_NO_WATCH=1, means the walk, as before.

// NoWatchEnv, set to 1, turns the watch off: every run measures its tree
// with a walk.
const NoWatchEnv = "AIRLOCK_NO_WATCH"

// watched is the state of a run's watch, from before the command starts
// to its settling.
type watched struct {
	w *watch.Watch
	// changes, once the command has ended, is what the watch saw; nil
	// when it cannot be trusted, and off says why.
	changes *watch.Changes
	off     string
	// stoppedNs is when the watch was stopped: every process of the
	// command had ended, and a change to the tree before then has its
	// event in what Stop read.
	stoppedNs int64
}

// startWatch watches a tree open has just staged for a run (ForRun) and
// measured as open: from here to the run's settling, every write to it
// is seen, whoever makes it (the caller between Open and Run included).
// It returns nil where no watch is wanted (the backend reads the change
// set itself), or one whose off says why it could not be had.
func startWatch(backend, staged string, open *manifest.Manifest, hosted bool) *watched {
	off := func(why string) *watched { return &watched{off: why} }
	if hosted {
		return nil // the backend reads the change set from its upper layer
	}
	if b, err := stage.Get(backend); err != nil {
		return off(err.Error())
	} else if _, ok := b.(stage.Differ); ok {
		return nil
	}
	switch {
	case os.Getenv(NoWatchEnv) == "1":
		return off(NoWatchEnv + "=1")
	case fault.Off("contain"):
		return off("the command is not contained")
	case !launch.LinkGuard():
		return off("this kernel has no seccomp filters, which keep the command from making hard links")
	}
	var dirs []string
	for _, e := range open.Entries {
		if e.Kind == manifest.KindDir {
			dirs = append(dirs, e.Path)
		}
	}
	w, err := watch.Start(staged, dirs)
	if err != nil {
		return off(err.Error())
	}
	return &watched{w: w}
}

// watching reports whether the watch is on, for the command's launch
// (launch.Spec.Watched).
func (wd *watched) watching() bool { return wd != nil && wd.w != nil }

// stop ends the watch once the command has ended; contained says every
// process of it had.
func (wd *watched) stop(contained bool) {
	if wd == nil || wd.w == nil {
		return
	}
	wd.stoppedNs = time.Now().UnixNano()
	ch, err := wd.w.Stop()
	switch {
	case err != nil:
		wd.off = err.Error()
	case !contained:
		wd.off = "the command ran uncontained: its processes may outlive the watch"
	default:
		wd.changes = ch
	}
	wd.w = nil
}

// watchedTree is the staged tree as a walk would measure it now, made from
// the open manifest and what the watch saw, or nil (with why) when the
// watch cannot say.
func (t *Tx) watchedTree(ctx context.Context, open *manifest.Manifest, noise *selector.Set) (*manifest.Manifest, error) {
	wd := t.watch
	if wd == nil || wd.changes == nil {
		return nil, nil
	}
	paths := make([]string, 0, len(wd.changes.Paths))
	for p := range wd.changes.Paths {
		paths = append(paths, p)
	}
	trees := make([]string, 0, len(wd.changes.Trees))
	for p := range wd.changes.Trees {
		trees = append(trees, p)
	}
	m, err := manifest.Patch(ctx, t.Path(), open, paths, trees, manifest.WalkOptions{Skip: noise.MatchSelf})
	if errors.Is(err, manifest.ErrLinked) {
		wd.changes, wd.off = nil, err.Error()
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("measure what the command wrote in the staged workspace: %w", err)
	}
	return m, nil
}
