package stage

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

var openat2Missing atomic.Bool

// openFile opens a source file beneath the base. openat2 with
// RESOLVE_NO_SYMLINKS refuses a symlink anywhere in rel, so a directory
// swapped for a link after the walk cannot make airlock copy a file from
// outside the base. Kernels before 5.6 lack openat2; there the last
// component alone is opened without following.
func (s *source) openFile(rel string) (*os.File, error) {
	if !openat2Missing.Load() {
		how := &unix.OpenHow{
			Flags:   sourceFlags,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		for range 64 {
			fd, err := unix.Openat2(s.fd, filepath.FromSlash(rel), how)
			switch err {
			case nil:
				return os.NewFile(uintptr(fd), s.abs(rel)), nil
			case unix.EAGAIN, unix.EINTR:
				// EAGAIN: a concurrent rename kept the kernel from proving the
				// lookup stayed beneath the base; openat2(2) says to retry.
				continue
			case unix.ENOSYS:
				openat2Missing.Store(true)
			default:
				return nil, &fs.PathError{Op: "open", Path: s.abs(rel), Err: err}
			}
			break
		}
		if !openat2Missing.Load() {
			return nil, &fs.PathError{Op: "open", Path: s.abs(rel), Err: unix.EAGAIN}
		}
	}
	return os.OpenFile(s.abs(rel), sourceFlags, 0)
}

// chmodAt changes the mode of the directory name in dirfd without following
// a symlink. fchmodat2(AT_SYMLINK_NOFOLLOW) does that in one call from
// Linux 6.6; before, the directory is opened O_NOFOLLOW and fchmod'ed,
// which needs read permission. Without it (not root), the name is checked
// and then chmod'ed by name: a link swapped in between can then only
// redirect the chmod to a file this same user owns.
func chmodAt(dirfd int, name string, mode uint32) error {
	err := unix.Fchmodat(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW)
	if err != unix.EOPNOTSUPP {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		defer unix.Close(fd)
		return unix.Fchmod(fd, mode)
	}
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return nil // no longer a directory: nothing to unlock
	}
	if err != unix.EACCES {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	return unix.Fchmodat(dirfd, name, mode, 0)
}

// setFileTimes sets an open file's times with futimens (utimensat on the
// descriptor), sparing a path lookup per staged file.
func setFileTimes(f *os.File, _ string, atimeNs, mtimeNs int64) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(atimeNs), unix.NsecToTimespec(mtimeNs)}
	for {
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
