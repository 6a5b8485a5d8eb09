//go:build linux || darwin

package safefs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotRegular reports a path that OpenRegular found to be something other
// than a regular file: a directory, FIFO, socket or device node.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens the regular file rel read-only and returns it with the
// facts fstat gives for the very file opened, which the caller compares with
// what it expects there. A symlink in any component, the last one included,
// fails with ErrSymlink; anything but a regular file fails with
// ErrNotRegular.
//
// It is the one way to read a tree that someone else may be rearranging
// while it is read (a staged workspace an agent still writes to): the name is
// looked at first and opened only if it is a regular file, so that a device
// node in its place is never opened and its driver never runs. A name
// swapped for a device between that look and the open can at worst be
// opened, never read: the opened file is fstat'ed and refused. O_NONBLOCK
// keeps a FIFO swapped in the same way from blocking the open; it is cleared
// before the file is returned.
func (r *Root) OpenRegular(rel string) (*os.File, Info, error) {
	var f *os.File
	var info Info
	err := r.do("open", rel, false, func(dirfd int, name string) error {
		var st unix.Stat_t
		if err := ignoringEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
			return err
		}
		if err := regularOnly(st.Mode); err != nil {
			return err
		}
		fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return finalSymlink(err)
		}
		if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
			unix.Close(fd)
			return err
		}
		if err := regularOnly(st.Mode); err != nil {
			unix.Close(fd)
			return err
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return err
		}
		f = os.NewFile(uintptr(fd), r.full(rel))
		info = infoFromStat(&st)
		return nil
	})
	return f, info, err
}

func regularOnly[M uint16 | uint32](mode M) error {
	switch uint32(mode) & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		return ErrSymlink
	}
	return &typeError{TypeName(FileMode(uint32(mode)))}
}

// typeError is ErrNotRegular naming the type found.
type typeError struct{ kind string }

func (e *typeError) Error() string        { return ErrNotRegular.Error() + ": " + e.kind }
func (e *typeError) Is(target error) bool { return target == ErrNotRegular }
