//go:build linux || darwin

package safefs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MoveIn renames the entry name of the directory from (a descriptor the
// caller holds, beneath the root or not) to toRel beneath the root, only
// if toRel does not exist: toRel's parent is opened beneath the root
// following no symlink, and the rename follows neither name. A toRel that
// exists fails with an error matching fs.ErrExist and nothing changes.
// Where the entry cannot be moved there at all — another file system, or
// a directory whose file system refuses it (a project quota, encryption:
// EXDEV), or no RENAME_NOREPLACE — the error matches
// errors.ErrUnsupported: the caller copies instead.
func (r *Root) MoveIn(from *os.File, name, toRel string) error {
	return r.do("move", toRel, false, func(dirfd int, last string) error {
		err := ignoringEINTR(func() error { return renameat2(int(from.Fd()), name, dirfd, last, renameNoReplace) })
		switch err {
		case unix.EXDEV, unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP:
			return fmt.Errorf("%w (moving %s/%s: %v)", errors.ErrUnsupported, from.Name(), name, err)
		}
		return err
	})
}

// Adopts reports whether a file moved into the directory dirRel ("" = the
// root) is what a file created there would be, but for its mode and times
// (which the caller sets): false where the directory gives a new file
// something a moved one keeps from where it was made — its group (a setgid
// directory), a default ACL, or inode flags new files inherit. Anything
// it cannot tell is false.
func (r *Root) Adopts(dirRel string) (bool, error) {
	if err := checkRelOrRoot(dirRel); err != nil {
		return false, r.pathErr("adopts", dirRel, err)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.fd < 0 {
		return false, r.pathErr("adopts", dirRel, os.ErrClosed)
	}
	dir, err := r.openDir(splitRel(dirRel), true)
	if err != nil {
		return false, r.pathErr("adopts", dirRel, err)
	}
	defer dir.close()
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(dir.fd, &st) }); err != nil {
		return false, r.pathErr("adopts", dirRel, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&unix.S_ISGID != 0 {
		return false, nil
	}
	return adoptsFd(dir.fd), nil
}

// NoInherited reports whether the directory dir gives a file created in
// it nothing of its own but what Adopts looks for: a directory where a
// file is made to be moved elsewhere (a store in the state directory)
// must give it nothing a file created at its destination would not get.
func NoInherited(dir *os.File) bool {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(int(dir.Fd()), &st) }); err != nil {
		return false
	}
	if st.Mode&unix.S_ISGID != 0 {
		return false
	}
	// Any extended attribute (an SELinux label, an ACL) may be given to
	// the files made there.
	if n, err := unix.Flistxattr(int(dir.Fd()), nil); err != nil || n > 0 {
		return false
	}
	return adoptsFd(int(dir.Fd()))
}
