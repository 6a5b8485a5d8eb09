package safefs

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// walkDirFlags opens directories on the way as O_PATH: the *at calls accept
// such a descriptor, and it needs only search permission on the directory.
const walkDirFlags = unix.O_PATH

// maxOpenat2Path is the longest path one openat2 call takes: PATH_MAX less
// the terminating NUL.
const maxOpenat2Path = unix.PathMax - 1

var (
	openat2Missing   atomic.Bool // openat2 returned ENOSYS: Linux before 5.6
	fchmodat2Missing atomic.Bool // fchmodat2 returned ENOSYS: Linux before 6.6

	// simulateOldKernel makes the package behave as on a kernel without
	// openat2 and fchmodat2, so that tests cover the fallbacks here.
	simulateOldKernel bool
)

// resolveDir opens the directory at comps beneath rootfd, following no
// symlink, and returns a descriptor the caller closes.
func resolveDir(rootfd int, comps []string, readable bool) (int, error) {
	if !simulateOldKernel && !openat2Missing.Load() {
		fd, err := resolveOpenat2(rootfd, comps, readable)
		switch err {
		case nil:
			return fd, nil
		case unix.ENOSYS:
			openat2Missing.Store(true)
		case unix.ELOOP:
			// A symlink is in the way. The walk meets it too and names
			// it; if it is gone by then, the walk's result is as safe as
			// openat2's would have been.
		default:
			return -1, err
		}
	}
	return walk(rootfd, comps, readable)
}

// resolveOpenat2 opens comps with openat2 and
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, which refuses a
// symlink in every component, the last one included (ELOOP). A path longer
// than PATH_MAX is resolved in chunks, each beneath the directory the chunk
// before it opened.
func resolveOpenat2(rootfd int, comps []string, readable bool) (int, error) {
	chunks := chunkComponents(comps, maxOpenat2Path)
	cur := rootfd
	for i, p := range chunks {
		flags := unix.O_PATH
		if readable && i == len(chunks)-1 {
			flags = unix.O_RDONLY
		}
		how := unix.OpenHow{
			Flags:   uint64(flags | unix.O_DIRECTORY | unix.O_CLOEXEC),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		fd, err := openat2(cur, p, &how)
		if cur != rootfd {
			unix.Close(cur)
		}
		if err != nil {
			if err == unix.EXDEV {
				return -1, errEscapedRoot
			}
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

func openat2(dirfd int, path string, how *unix.OpenHow) (int, error) {
	// EAGAIN means the kernel saw a concurrent rename and could not prove
	// the lookup stayed beneath the root; the man page says to retry.
	for range 64 {
		fd, err := ignoringEINTR2(func() (int, error) { return unix.Openat2(dirfd, path, how) })
		if err != unix.EAGAIN {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

// chmodAt changes the mode of name in dirfd without following it if it is
// a symlink. fchmodat2(AT_SYMLINK_NOFOLLOW) does that in one call on Linux
// 6.6 and later, and fails with EOPNOTSUPP on a symlink, whose mode Linux
// cannot change. Before 6.6 the name is opened O_NOFOLLOW and fchmod'ed:
// that needs read permission on the file, which root has, and never follows
// a symlink either. Resolving an O_PATH descriptor through /proc/self/fd is
// deliberately not used: it depends on /proc being mounted and trusted.
func chmodAt(dirfd int, name string, mode uint32) error {
	if simulateOldKernel || fchmodat2Missing.Load() {
		return chmodByOpen(dirfd, name, mode)
	}
	var err error
	for range 8 {
		err = fchmodat2(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW)
		switch err {
		case unix.ENOSYS:
			fchmodat2Missing.Store(true)
			return chmodByOpen(dirfd, name, mode)
		case unix.EOPNOTSUPP:
			// Linux says this for a symlink. If the name is no
			// longer one, it was swapped since: try again on what is
			// there now.
			if isSymlinkAt(dirfd, name) {
				return ErrSymlink
			}
			continue
		}
		return err
	}
	return err
}

func fchmodat2(dirfd int, name string, mode uint32, flags int) error {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	return ignoringEINTR(func() error {
		_, _, errno := unix.Syscall6(unix.SYS_FCHMODAT2, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(mode), uintptr(flags), 0, 0)
		if errno != 0 {
			return errno
		}
		return nil
	})
}

func fsync(fd int) error {
	return ignoringEINTR(func() error { return unix.Fsync(fd) })
}

// chmodByOpen is chmodAt for kernels without fchmodat2. Only regular files
// and directories are opened, so that a device node's open has no side
// effect; O_NONBLOCK keeps a FIFO swapped in after the look from blocking.
func chmodByOpen(dirfd int, name string, mode uint32) error {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR:
	case unix.S_IFLNK:
		return ErrSymlink
	default:
		return unix.EOPNOTSUPP
	}
	fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return ErrSymlink
		}
		return err
	}
	defer unix.Close(fd)
	return ignoringEINTR(func() error { return unix.Fchmod(fd, mode) })
}
