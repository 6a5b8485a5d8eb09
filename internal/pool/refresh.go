package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/watchd"
)

// Pooled is a staged tree kept after its transaction settled, to be made
// the next transaction's workspace by Refresh instead of copying the whole
// base again.
type Pooled struct {
	// Tree loads the tree as it was measured when it was pooled (the walk
	// of the settling diff). A tree that differs from it now was written
	// after its transaction ended and is never reused. (Loaders, so that
	// the pooled manifests are in memory only while they are needed.)
	Tree func() (*manifest.Manifest, error)
	// TreeWalkNs is when that walk started: an entry whose ctime is not
	// older by the state file system's window (Request.StateClock) could
	// have been written again within the same timestamp step without a
	// trace, and its bytes are compared.
	TreeWalkNs int64
	// Source loads, for each pooled entry that was provably untouched
	// since it was staged, the base's stat facts of the very version its
	// bytes were copied from (see Source). A base file that still shows
	// exactly those facts still holds those bytes (ctime cannot be set by
	// any user call).
	Source func() (*manifest.Manifest, error)
	// SourceWalkNs is when the base was measured for Source: a source
	// entry whose ctime is not older by the base file system's window
	// (Request.BaseClock) proves nothing by stat alone, and its bytes are
	// compared.
	SourceWalkNs int64
	// Ignore reports paths of the tree that the pooled manifests did not
	// cover (agent noise the settling diff skipped): they are refreshed
	// like any other path, but their stat is no evidence of a late writer.
	Ignore func(rel string, isDir bool) bool
	// Listed says Source names every entry of each base directory as the
	// base's walk at open found it (a KindNone name where no version is
	// proved), but in the directories of Unlisted, where its Skip left
	// one out (see Source). The refresh then takes the names of a
	// directory whose stat proves them unchanged from the pooled
	// manifests instead of reading them (manifest.Since): the base's from
	// Source, the tree's from Tree.
	Listed   bool
	Unlisted []string
	// TreeChanges, when set, is every path of the tree that an event
	// touched since its watch began, from open to now (internal/watchd):
	// the tree is measured by measuring those again over the pooled walk
	// (manifest.Patch), not by a walk.
	TreeChanges *watchd.Changes
	// BaseChanges, when set, is every path of the base that changed since
	// Base loads was measured, by the same token: the base is measured by
	// measuring those again over it, not by a walk.
	BaseChanges *watchd.Changes
	Base        func() (*manifest.Manifest, error)
}

// Refreshed is what Refresh did, and which of the two measurements a
// watch made instead of a walk.
type Refreshed struct {
	stage.Refreshed
	TreeWatched, BaseWatched bool
}

// Source makes Pooled.Source for a settled tree: for each entry the
// settling walk found untouched since open, the base's stat facts of the
// version it was copied from. Untouched is every stat fact as staged,
// ctime included, and for a file staged too recently for its stat to
// prove that (its open entry carries a digest: see stage.Result.Staged),
// its bytes as staged too: the settling diff compared them, and left the
// digest of what it read on the walked entry (changeset.Diff). A
// directory or symlink missing from it was touched by the command (a
// chmod, chown or extended attribute moves ctime too). base and open are
// the transaction's manifests from open (stage.Result.Base and Staged);
// walked is the settling walk, once the settling diff has run over it.
//
// Every other path of base is there too, as a KindNone entry that holds
// its name only: where base says its walk listed every name (Listed), so
// does the result, and a later refresh can take a base directory's names
// from it (Pooled.Listed).
func Source(base, open, walked *manifest.Manifest) *manifest.Manifest {
	out := &manifest.Manifest{Entries: make([]manifest.Entry, 0, len(base.Entries))}
	for i := range base.Entries {
		b := &base.Entries[i]
		if e, ok := walked.Lookup(b.Path); ok && b.Kind == e.Kind && untouchedSince(open, e) {
			out.Entries = append(out.Entries, *b)
			continue
		}
		out.Entries = append(out.Entries, manifest.Entry{Path: b.Path, Kind: manifest.KindNone})
	}
	if unlisted, ok := base.Listed(); ok {
		out.MarkListed(unlisted)
	}
	return out
}

// untouchedSince reports whether the walked entry e is as open staged it.
func untouchedSince(open *manifest.Manifest, e *manifest.Entry) bool {
	o, ok := open.Lookup(e.Path)
	if !ok || !manifest.SameStat(*o, *e) {
		return false
	}
	return o.Kind != manifest.KindFile || o.Digest == "" || e.Digest == o.Digest
}

// ErrTouched is wrapped by Refresh's error when the pooled tree was
// written after it was pooled: it must be deleted, never reused.
var ErrTouched = errors.New("the pooled tree was written after its transaction ended")

// Refresh makes req.Dir, which holds a pooled tree, exactly what staging
// req.Base afresh would make it (stage.Refresh), once it has proved that
// nothing wrote it since it was pooled (a walk compared with the pooled
// record, failing with ErrTouched). That no process can reach the tree is
// the caller's to have proved first (Take: a quiet moment after it
// settled), so that the walk is taken when no writer is left. On any error
// the tree is in an unknown state: the caller deletes it.
func Refresh(ctx context.Context, req stage.Request, p Pooled) (*stage.Result, *Refreshed, error) {
	// The pooled manifests are decoded beside the walks, which take
	// directories' names from them (since) once they are ready.
	var rec, src *manifest.Manifest
	var recErr, srcErr error
	recReady, srcReady := make(chan struct{}), make(chan struct{})
	go func() { defer close(recReady); rec, recErr = p.Tree() }()
	go func() { defer close(srcReady); src, srcErr = p.Source() }()
	treeSince, baseSince := since(p, req, recReady, srcReady, &rec, &src)
	var out Refreshed
	ex := stage.Existing{
		Measure: func(ctx context.Context) (*manifest.Manifest, []bool, error) {
			tree, watched, err := measureTree(ctx, req.Dir, p.TreeChanges, treeSince, recReady, &rec)
			<-recReady
			if err != nil {
				return nil, nil, fmt.Errorf("measure pooled tree: %w", err)
			}
			if recErr != nil {
				return nil, nil, fmt.Errorf("%w: its record cannot be read: %v", ErrTouched, recErr)
			}
			covered, err := untouched(rec, p.Ignore, tree)
			if err != nil {
				return nil, nil, err
			}
			out.TreeWatched = watched
			return tree, covered, nil
		},
		TreeWalkNs:   p.TreeWalkNs,
		Source:       func() (*manifest.Manifest, error) { <-srcReady; return src, srcErr },
		SourceWalkNs: p.SourceWalkNs, BaseSince: baseSince,
	}
	if p.BaseChanges != nil && p.Base != nil {
		ex.MeasureBase = func(ctx context.Context) (*manifest.Manifest, error) {
			m, watched, err := measureBase(ctx, req, p.Base, p.BaseChanges, baseSince)
			out.BaseWatched = watched
			return m, err
		}
	}
	res, done, err := stage.Refresh(ctx, req, ex)
	if err != nil {
		return nil, nil, err
	}
	out.Refreshed = *done
	return res, &out, nil
}

// measureTree measures the pooled tree as a walk would: the pooled walk
// (rec, once recReady) with every path the watch named measured again,
// when there is a watch's word (ch); else, or where the patch cannot be
// trusted (a named file with a second name), a walk. watched says the
// watch's word was used.
func measureTree(ctx context.Context, dir string, ch *watchd.Changes, treeSince *manifest.Since, recReady <-chan struct{}, rec **manifest.Manifest) (*manifest.Manifest, bool, error) {
	if ch != nil {
		<-recReady
		if *rec != nil {
			m, err := manifest.Patch(ctx, dir, *rec, ch.Paths, ch.Trees, manifest.WalkOptions{})
			if err == nil {
				return m, true, nil
			}
			if ctx.Err() != nil {
				return nil, false, err
			}
		}
	}
	m, err := manifest.Walk(ctx, dir, manifest.WalkOptions{Since: treeSince})
	return m, false, err
}

// measureBase measures the base as a walk with req.Skip would: the base
// as the pooled tree's open measured it, with every path that changed
// since measured again (files with a second name among them: the watch
// names them every time, as a write through another name names nothing
// here); else a walk.
func measureBase(ctx context.Context, req stage.Request, load func() (*manifest.Manifest, error), ch *watchd.Changes, baseSince *manifest.Since) (*manifest.Manifest, bool, error) {
	if prev, err := load(); err == nil {
		m, err := manifest.Patch(ctx, req.Base, prev, ch.Paths, ch.Trees, manifest.WalkOptions{Skip: req.Skip, Linked: true})
		if err == nil {
			return m, true, nil
		}
		if ctx.Err() != nil {
			return nil, false, err
		}
	}
	m, err := manifest.Walk(ctx, req.Base, manifest.WalkOptions{Skip: req.Skip, Since: baseSince})
	return m, false, err
}

// since says how the tree's walk and the base's may take a directory's
// names from the pooled manifests (manifest.Since), or nil each where they
// may not (a record that does not say its source is listed). rec and src
// are the tree's record and the source, set by their decoders before they
// close recReady and srcReady; each Since is ready once what it reads is.
//
// The base's: Source names every entry of each base directory but those
// of Unlisted, as the walk at open found them, from SourceWalkNs on, with
// the directory's stat (a directory Source holds as a KindNone name is
// read).
//
// The tree's: the settling walk skipped agent noise, so its record names
// every entry only of a directory that held none, which is one the command
// did not touch (Source holds it as a directory: staging made it without
// noise, and its stat is as staged). The proof starts at SourceWalkNs, no
// later than staging measured it: the directory's names are the same since
// then, through the settling walk that recorded them, to now.
func since(p Pooled, req stage.Request, recReady, srcReady <-chan struct{}, rec, src **manifest.Manifest) (tree, base *manifest.Since) {
	if !p.Listed {
		return nil, nil
	}
	unlisted := slices.Clone(p.Unlisted)
	slices.Sort(unlisted)
	baseReady, treeReady := make(chan struct{}), make(chan struct{})
	base = &manifest.Since{WalkNs: p.SourceWalkNs, Clock: req.BaseClock, Ready: baseReady, Listed: func(dir string) bool {
		_, found := slices.BinarySearch(unlisted, dir)
		return !found
	}}
	tree = &manifest.Since{WalkNs: p.SourceWalkNs, Clock: req.StateClock, Ready: treeReady, Listed: func(dir string) bool {
		return kindAt(*src, dir) == manifest.KindDir
	}}
	go func() {
		<-srcReady
		base.Manifest = *src // nil where it could not be decoded: none
		close(baseReady)
		<-recReady
		if *src != nil {
			tree.Manifest = *rec
		}
		close(treeReady)
	}()
	return tree, base
}

// kindAt is the kind of m's entry at path (KindNone: none). Unlike
// Lookup, it is safe for concurrent use.
func kindAt(m *manifest.Manifest, path string) manifest.Kind {
	es := m.Entries
	i, ok := slices.BinarySearchFunc(es, path, func(e manifest.Entry, p string) int { return strings.Compare(e.Path, p) })
	if !ok {
		return manifest.KindNone
	}
	return es[i].Kind
}

// untouched proves that nothing wrote the tree since it was pooled: every
// entry the pooled walk saw is there with the same stat facts, and nothing
// is there that it did not see, apart from paths it did not cover.
// It reports which entries of now the pooled walk covered.
func untouched(rec *manifest.Manifest, ignore func(string, bool) bool, now *manifest.Manifest) ([]bool, error) {
	covered := make([]bool, len(now.Entries))
	i, j := 0, 0
	was, is := rec.Entries, now.Entries
	for i < len(was) || j < len(is) {
		switch {
		case j == len(is) || (i < len(was) && was[i].Path < is[j].Path):
			return nil, fmt.Errorf("%w: %s is gone", ErrTouched, quote(was[i].Path))
		case i == len(was) || is[j].Path < was[i].Path:
			if ignore == nil || !ignored(ignore, is[j]) {
				return nil, fmt.Errorf("%w: %s appeared", ErrTouched, quote(is[j].Path))
			}
			j++
		default:
			if !manifest.SameStat(was[i], is[j]) {
				return nil, fmt.Errorf("%w: %s changed", ErrTouched, quote(is[j].Path))
			}
			covered[j] = true
			i++
			j++
		}
	}
	return covered, nil
}

// ignored reports whether e lies in a part of the tree the pooled walk
// skipped: e itself or one of its parent directories matches.
func ignored(skip func(string, bool) bool, e manifest.Entry) bool {
	if skip(e.Path, e.Kind == manifest.KindDir) {
		return true
	}
	for p := e.Path; ; {
		k := strings.LastIndexByte(p, '/')
		if k < 0 {
			return false
		}
		p = p[:k]
		if skip(p, true) {
			return true
		}
	}
}
