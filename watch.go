package airlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
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
	// kept is the watch after the command, still watching, until settling
	// hands it to the state root's daemon (handWatch) or closes it.
	kept *watch.Watch
	// continuous says the watch was set before the tree's measurement at
	// open (a recycled tree's), not after it: nothing written to the tree
	// since that measurement went unseen, which handing it over needs.
	continuous bool
	// stoppedNs is when the watch was stopped: every process of the
	// command had ended, and a change to the tree before then has its
	// event in what Stop read.
	stoppedNs int64
}

// watchable says why a run's tree over backend cannot be watched, or ""
// where it can (or the backend reads the change set itself: see
// startWatch).
func watchable(backend string, hosted bool) string {
	if hosted {
		return ""
	}
	if b, err := stage.Get(backend); err != nil {
		return err.Error()
	} else if _, ok := b.(stage.Differ); ok {
		return ""
	}
	switch {
	case os.Getenv(NoWatchEnv) == "1":
		return NoWatchEnv + "=1"
	case fault.Off("contain"):
		return "the command is not contained"
	case !launch.LinkGuard():
		return "this kernel has no seccomp filters, which keep the command from making hard links"
	}
	return ""
}

// startWatch watches a tree open has just staged for a run (ForRun) and
// measured as open: from here to the run's settling, every write to it
// is seen, whoever makes it (the caller between Open and Run included).
// early is a watch set on a recycled tree before the refresh measured it
// (pool.Reused.Watch), which it goes on with; a fresh tree is watched from
// here, once measured. It returns nil where no watch is wanted (the
// backend reads the change set itself), or one whose off says why it
// could not be had.
func startWatch(backend, staged string, open *manifest.Manifest, hosted bool, early *watch.Watch) *watched {
	if why := watchable(backend, hosted); why != "" {
		if early != nil {
			early.Stop()
		}
		return &watched{off: why}
	}
	if hosted {
		return nil // the backend reads the change set from its upper layer
	}
	if b, err := stage.Get(backend); err == nil {
		if _, ok := b.(stage.Differ); ok {
			return nil
		}
	}
	if early != nil {
		return &watched{w: early, continuous: true}
	}
	var dirs []string
	for _, e := range open.Entries {
		if e.Kind == manifest.KindDir {
			dirs = append(dirs, e.Path)
		}
	}
	w, err := watch.Start(staged, dirs)
	if err != nil {
		return &watched{off: err.Error()}
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
	ch, err := wd.w.Pause()
	switch {
	case err != nil:
		wd.off = err.Error()
		wd.w.Close()
	case !contained:
		wd.off = "the command ran uncontained: its processes may outlive the watch"
		wd.w.Close()
	default:
		wd.changes, wd.kept = ch, wd.w
	}
	wd.w = nil
}

// close ends what is left of the watch once the run has settled.
func (wd *watched) close() {
	if wd == nil {
		return
	}
	if wd.w != nil {
		wd.w.Stop()
		wd.w = nil
	}
	if wd.kept != nil {
		wd.kept.Close()
		wd.kept = nil
	}
}

// handWatch hands the watch that has watched the run's tree since open to
// the state root's daemon, as the tree is pooled, and returns the key it
// is held under ("" where it is not). The watch goes on from where the
// change set was read: nothing written to the tree after the command goes
// unseen until the next open asks (internal/watchd). Only a watch whose
// directories are all still where it watched them qualifies: one that saw
// a directory made, moved or deleted has none on the new ones, or a stale
// path on the moved ones; and one that saw agent noise written leaves in
// the tree files the pooled walk does not list, which the refresh finds
// only by walking.
func (t *Tx) handWatch() string {
	wd := t.watch
	if wd == nil || wd.kept == nil || !wd.continuous || wd.changes == nil || len(wd.changes.Trees) > 0 {
		return ""
	}
	d := t.store.daemon()
	if d == nil {
		return ""
	}
	noise, err := selector.New(t.rec.Noise)
	if err != nil {
		return ""
	}
	for p := range wd.changes.Paths {
		if noisy(noise, p) {
			return ""
		}
	}
	var key [16]byte
	rand.Read(key[:])
	k := hex.EncodeToString(key[:])
	fd, dirs := wd.kept.Hand()
	if err := d.Hold(k, t.Base(), t.Path(), fd, dirs); err != nil {
		return ""
	}
	return k
}

// noisy reports whether p or one of its directories is agent noise.
func noisy(noise *selector.Set, p string) bool {
	if noise.MatchSelf(p, false) {
		return true
	}
	for {
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
		if noise.MatchSelf(p, true) {
			return true
		}
	}
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
