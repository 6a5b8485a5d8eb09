//go:build linux || darwin

package safefs

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// walk opens the directory at comps beneath rootfd one component at a time,
// each with openat(O_NOFOLLOW|O_DIRECTORY) relative to the one before, so
// that no symlink is followed anywhere on the way. With readable the last
// directory is opened O_RDONLY (for fsync); otherwise every directory is
// opened with walkDirFlags, which on Linux is O_PATH and needs only search
// permission. The caller closes the returned descriptor.
func walk(rootfd int, comps []string, readable bool) (int, error) {
	cur := rootfd
	for i, c := range comps {
		flags := walkDirFlags
		if readable && i == len(comps)-1 {
			flags = unix.O_RDONLY
		}
		fd, err := openComponent(cur, c, flags)
		if err != nil {
			if err == errSymlinkHere {
				err = symlinkInPath(comps[:i+1])
			}
			if cur != rootfd {
				unix.Close(cur)
			}
			return -1, err
		}
		if cur != rootfd {
			unix.Close(cur)
		}
		cur = fd
	}
	return cur, nil
}

// errSymlinkHere is openComponent's word for "this component is a
// symlink"; walk turns it into an error naming the component.
var errSymlinkHere = errors.New("symlink")

// openComponent opens the directory name in dirfd without following it.
func openComponent(dirfd int, name string, flags int) (int, error) {
	var err error
	for range 8 {
		var fd int
		fd, err = openat(dirfd, name, flags|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.ELOOP && err != unix.ENOTDIR {
			return fd, err
		}
		// Linux reports a symlink opened O_PATH|O_NOFOLLOW|O_DIRECTORY as
		// ENOTDIR and macOS as ELOOP; only a look tells them apart from
		// a real non-directory. If the look finds a directory, the name
		// was swapped since the open: try again on what is there now.
		var st unix.Stat_t
		if ignoringEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }) != nil {
			return -1, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return -1, errSymlinkHere
		case unix.S_IFDIR:
			continue
		}
		return -1, err
	}
	return -1, err
}

func isSymlinkAt(dirfd int, name string) bool {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// symlinkInPath names the symlink that stopped a resolution, so that the
// user can see which component to look at.
func symlinkInPath(prefix []string) error {
	return fmt.Errorf("%w at %q", ErrSymlink, strings.Join(prefix, "/"))
}
