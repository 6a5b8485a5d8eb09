package stage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// Retire removes a large staged workspace without making the caller wait
// for it: the tree is renamed aside at once, so its path is free and
// nothing reaches it any more, and a detached process deletes it. Deleting
// tens of thousands of files takes seconds, which would otherwise be the
// bulk of a ten-file commit. Where the tree cannot be renamed or no
// process can be started, it is removed here and now, as Remove does.
// Backends whose trees are cheap to remove (overlay) just Remove.
func Retire(ctx context.Context, b Backend, dir string) error {
	if _, ok := b.(overlayBackend); ok {
		return b.Remove(ctx, dir)
	}
	var trash string
	for i := 0; ; i++ {
		trash = dir + ".trash"
		if i > 0 {
			trash += strconv.Itoa(i)
		}
		if _, err := os.Lstat(trash); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if i == 100 {
			return b.Remove(ctx, dir)
		}
	}
	if err := os.Rename(dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return b.Remove(ctx, dir)
	}
	if err := removeDetached(trash); err != nil {
		if rerr := removeTree(ctx, trash); rerr != nil {
			return fmt.Errorf("remove staged workspace %s (moved to %s): %w", quote(dir), quote(trash), rerr)
		}
	}
	return nil
}
