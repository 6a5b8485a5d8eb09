package stage

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// digestRacy records the digests that stat cannot stand in for (see
// Result): of each staged file whose ctime lies within req.StateClock's
// window of now, and of each base file whose ctime lies within
// req.BaseClock's window of res.WalkNs. Both are the digest of the staged
// bytes: those the command starts from, and those of the base version
// they were staged from (copied, or kept because they were equal). dir
// holds the staged files (res.Staged's paths are relative to it). An
// entry that already has its digest is left as it is, so a backend that
// adds entries after staging calls it again for those.
//
// It replaces a wait: staging could instead wait out the window before
// the command starts, so that every later write moves a ctime; on a file
// system that keeps whole seconds that is up to a second per open, while
// the files changed that recently are few (on a fresh copy, those copied
// in its last second), and reading them again costs less.
func digestRacy(ctx context.Context, res *Result, dir string, req Request) error {
	at := time.Now().UnixNano()
	base := res.Base.Entries
	type job struct {
		s      *manifest.Entry // the staged file
		b      *manifest.Entry // its base entry, when that needs the digest
		staged bool            // the staged entry needs it
	}
	var jobs []job
	bi := 0
	for i := range res.Staged.Entries {
		s := &res.Staged.Entries[i]
		if s.Kind != manifest.KindFile {
			continue
		}
		for bi < len(base) && base[bi].Path < s.Path {
			bi++
		}
		var b *manifest.Entry
		if bi < len(base) && base[bi].Path == s.Path && base[bi].Kind == manifest.KindFile &&
			base[bi].Digest == "" && !req.BaseClock.Proves(base[bi].CtimeNs, res.WalkNs) {
			b = &base[bi]
		}
		racy := s.Digest == "" && !req.StateClock.Proves(s.CtimeNs, at)
		switch {
		case racy || (b != nil && s.Digest == ""):
			jobs = append(jobs, job{s, b, racy})
		case b != nil:
			b.Digest = s.Digest
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	root, err := safefs.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("open staged workspace %s: %w", quote(dir), err)
	}
	defer root.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(copyWorkers, len(jobs)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= len(jobs) {
					return
				}
				j := jobs[k]
				d, err := stagedDigest(root, *j.s)
				if err != nil {
					cancel(err)
					return
				}
				if j.staged {
					j.s.Digest = d
				}
				if j.b != nil {
					j.b.Digest = d
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// stagedDigest reads the staged file e measured, beneath root, and only
// that file: a file staging made that is not as staging left it was
// written by something else meanwhile.
func stagedDigest(root *safefs.Root, e manifest.Entry) (string, error) {
	f, err := changeset.OpenStaged(root, e)
	if err != nil {
		return "", fmt.Errorf("staging failed: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, e.Size+1))
	if err != nil {
		return "", fmt.Errorf("read staged file %s: %w", quote(f.Name()), err)
	}
	if n != e.Size {
		return "", fmt.Errorf("staging failed: %s changed size while it was staged; remove anything else writing there and retry", quote(f.Name()))
	}
	return manifest.Sum(h), nil
}
