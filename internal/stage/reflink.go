package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// reflinkBackend stages like copy, but makes every file an explicit clone
// of its base file (FICLONE on Linux, clonefile on macOS): a new inode
// that shares the base file's data blocks until either side writes, so
// staging costs metadata, not bytes, and isolation is the same as a copy.
// Where a file cannot be cloned, staging fails instead of silently copying.
type reflinkBackend struct{}

func (reflinkBackend) Name() string { return Reflink }

func (reflinkBackend) Supported(stateDir string) (bool, string) { return cloneSupport(stateDir) }

func (reflinkBackend) Remove(ctx context.Context, dir string) error { return removeTree(ctx, dir) }

func (reflinkBackend) Stage(ctx context.Context, req Request) (*Result, error) {
	return stageCopy(ctx, req, true)
}

// errNoClone marks a file system that cannot clone at all.
var errNoClone = errors.New("the file system cannot clone files")

// cloneErr says why a file could not be cloned and what to do instead.
func cloneErr(src, dst string, err error) error {
	switch {
	case errors.Is(err, errCrossDevice):
		return fmt.Errorf("clone %s to %s: the base and the state directory are on different file systems, which reflinks cannot cross; use --backend copy or set AIRLOCK_STATE_DIR to a directory on the base's file system", quote(src), quote(dst))
	case errors.Is(err, errNoClone):
		return fmt.Errorf("clone %s to %s: %s cannot clone files (%v); use --backend copy", quote(src), quote(dst), fsName(filepath.Dir(dst)), errors.Unwrap(err))
	}
	return fmt.Errorf("clone %s to %s: %w", quote(src), quote(dst), unwrapPath(err))
}

// cloneSupport probes whether files in dir can be cloned, by cloning a
// small file into another beside it.
func cloneSupport(dir string) (bool, string) {
	a, err := os.CreateTemp(dir, ".reflink-probe-*")
	if err != nil {
		return false, fmt.Sprintf("cannot probe %s: %v", dir, unwrapPath(err))
	}
	defer os.Remove(a.Name())
	defer a.Close()
	if _, err := a.Write(make([]byte, 4096)); err != nil {
		return false, fmt.Sprintf("cannot probe %s: %v", dir, unwrapPath(err))
	}
	b, err := os.CreateTemp(dir, ".reflink-probe-*")
	if err != nil {
		return false, fmt.Sprintf("cannot probe %s: %v", dir, unwrapPath(err))
	}
	name := b.Name()
	defer func() { os.Remove(name) }()
	f, err := cloneInto(b, a, name)
	if f != nil {
		b = f
	}
	b.Close()
	if err != nil {
		if errors.Is(err, errNoClone) {
			return false, fmt.Sprintf("the state directory %s is on %s, which cannot clone files", dir, fsName(dir))
		}
		return false, fmt.Sprintf("cloning a file in %s failed: %v", dir, err)
	}
	return true, fmt.Sprintf("the state directory %s is on %s, which clones files", dir, fsName(dir))
}
