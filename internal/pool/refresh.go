package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/stage"
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
func Source(base, open, walked *manifest.Manifest) *manifest.Manifest {
	out := &manifest.Manifest{Entries: make([]manifest.Entry, 0, len(walked.Entries))}
	for i := range walked.Entries {
		e := &walked.Entries[i]
		o, ok := open.Lookup(e.Path)
		if !ok || !manifest.SameStat(*o, *e) {
			continue
		}
		if o.Kind == manifest.KindFile && o.Digest != "" && e.Digest != o.Digest {
			continue
		}
		if b, ok := base.Lookup(e.Path); ok && b.Kind == e.Kind {
			out.Entries = append(out.Entries, *b)
		}
	}
	return out
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
func Refresh(ctx context.Context, req stage.Request, p Pooled) (*stage.Result, *stage.Refreshed, error) {
	tree, untouched, err := prove(ctx, req.Dir, p)
	if err != nil {
		return nil, nil, err
	}
	return stage.Refresh(ctx, req, stage.Existing{
		Tree: tree, Untouched: untouched, TreeWalkNs: p.TreeWalkNs,
		Source: p.Source, SourceWalkNs: p.SourceWalkNs,
	})
}

// prove walks the pooled tree at dir and proves it untouched (see
// Refresh). It returns the walk and which of its entries the pooled record
// covered.
func prove(ctx context.Context, dir string, p Pooled) (*manifest.Manifest, []bool, error) {
	// The pooled record is decoded beside the walk; it is dropped before
	// the caller walks the base, which bounds the memory a large tree
	// takes.
	recDone := make(chan struct{})
	var rec *manifest.Manifest
	var recErr error
	go func() { defer close(recDone); rec, recErr = p.Tree() }()
	tree, err := manifest.Walk(ctx, dir, manifest.WalkOptions{})
	<-recDone
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
	return tree, covered, nil
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
