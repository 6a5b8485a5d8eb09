package safefs

import (
	"golang.org/x/sys/unix"
)

// walkDirFlags opens directories on the way read-only: macOS has no O_PATH.
const walkDirFlags = unix.O_RDONLY

// resolveDir opens the directory at comps beneath rootfd, following no
// symlink, and returns a descriptor the caller closes. macOS has no openat2,
// so it always walks one component at a time.
func resolveDir(rootfd int, comps []string, readable bool) (int, error) {
	return walk(rootfd, comps, readable)
}

// chmodAt changes the mode of name in dirfd without following it if it is
// a symlink. macOS's fchmodat honours AT_SYMLINK_NOFOLLOW (it would change
// the link's own mode); the look first makes a symlink fail with ErrSymlink
// as on Linux, and a symlink swapped in after the look is still not followed.
func chmodAt(dirfd int, name string, mode uint32) error {
	if isSymlinkAt(dirfd, name) {
		return ErrSymlink
	}
	return ignoringEINTR(func() error { return unix.Fchmodat(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW) })
}

// fsync asks for F_FULLFSYNC, as os.File.Sync does on macOS: plain fsync
// there does not flush the drive's cache.
func fsync(fd int) error {
	err := ignoringEINTR(func() error {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
		return err
	})
	if err == nil {
		return nil
	}
	return ignoringEINTR(func() error { return unix.Fsync(fd) })
}
