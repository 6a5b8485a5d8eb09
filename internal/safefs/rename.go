//go:build linux || darwin

package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Exchange swaps the entries at aRel and bRel in one atomic step
// (renameat2 RENAME_EXCHANGE on Linux, renamex_np RENAME_SWAP on macOS):
// both must exist, and neither name is followed. It is how the apply
// replaces a base file without a moment in which a writer's completed edit
// of the old file could be unlinked unseen: the old entry lives on under
// the other name, where it can be examined before it is let go. A file
// system that cannot exchange (NFS, many FUSE file systems) gives an error
// that matches errors.ErrUnsupported.
func (r *Root) Exchange(aRel, bRel string) error {
	return r.rename("exchange", aRel, bRel, renameExchange)
}

// RenameNoReplace renames fromRel to toRel only if toRel does not exist;
// otherwise it fails with an error matching fs.ErrExist, and nothing
// changes. A file system that cannot do it atomically gives an error that
// matches errors.ErrUnsupported.
func (r *Root) RenameNoReplace(fromRel, toRel string) error {
	return r.rename("rename", fromRel, toRel, renameNoReplace)
}

func (r *Root) rename(op, fromRel, toRel string, flags uint) error {
	if err := checkRel(fromRel); err != nil {
		return r.pathErr(op, fromRel, err)
	}
	if err := checkRel(toRel); err != nil {
		return r.pathErr(op, toRel, err)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.fd < 0 {
		return r.pathErr(op, fromRel, os.ErrClosed)
	}
	fromComps, toComps := splitRel(fromRel), splitRel(toRel)
	from, err := r.openDir(fromComps[:len(fromComps)-1], false)
	if err != nil {
		return r.pathErr(op, fromRel, err)
	}
	defer from.close()
	// Two names in one directory (an apply's temporary name beside its
	// path) are renamed through one descriptor of it, opened once.
	to := from
	if !slices.Equal(fromComps[:len(fromComps)-1], toComps[:len(toComps)-1]) {
		if to, err = r.openDir(toComps[:len(toComps)-1], false); err != nil {
			return r.pathErr(op, toRel, err)
		}
		defer to.close()
	}
	err = ignoringEINTR(func() error {
		if flags == 0 {
			return unix.Renameat(from.fd, fromComps[len(fromComps)-1], to.fd, toComps[len(toComps)-1])
		}
		return renameat2(from.fd, fromComps[len(fromComps)-1], to.fd, toComps[len(toComps)-1], flags)
	})
	if flags != 0 && (err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP || err == unix.ENOTSUP) {
		err = fmt.Errorf("%w (%v)", errors.ErrUnsupported, err)
	}
	if err != nil {
		return r.pathErr(op, fromRel, fmt.Errorf("to %s: %w", r.full(toRel), err))
	}
	return nil
}

// CreateExcl creates the new file rel with mode 0600, open for reading and
// writing; it fails with an error matching fs.ErrExist if rel exists, and
// never follows a symlink there.
func (r *Root) CreateExcl(rel string) (*os.File, error) {
	var f *os.File
	err := r.do("create", rel, false, func(dirfd int, name string) error {
		fd, err := openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		f = os.NewFile(uintptr(fd), r.full(rel))
		return nil
	})
	return f, err
}

// OpenRootNoFollow opens the absolute path dir as a Root without following
// a symlink in any of its components: dir must be as filepath.EvalSymlinks
// returns it. It is how airlock opens a base it resolved when the
// transaction opened: whoever can rename entries on the way to the base
// (its parent's owner) could otherwise swap a component for a symlink
// between the resolve and the open, and every write through the root would
// land in the other directory. A symlink on the way fails with an error
// matching ErrSymlink. The caller still compares the opened directory's
// identity (Lstat("")) with the one it expects: a directory renamed into
// the base's place is no symlink.
func OpenRootNoFollow(dir string) (*Root, error) {
	if !strings.HasPrefix(dir, "/") {
		return nil, &fs.PathError{Op: "openroot", Path: dir, Err: errors.New("not an absolute path")}
	}
	top, err := ignoringEINTR2(func() (int, error) {
		return unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "openroot", Path: "/", Err: err}
	}
	comps := splitRel(strings.Trim(path.Clean(dir), "/"))
	if len(comps) == 0 {
		return &Root{path: dir, fd: top}, nil
	}
	fd, err := resolveDir(top, comps, true)
	unix.Close(top)
	if err != nil {
		return nil, &fs.PathError{Op: "openroot", Path: dir, Err: err}
	}
	return &Root{path: dir, fd: fd}, nil
}
