//go:build linux || darwin

package stage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// source is the base, opened once so that source files are opened beneath
// it rather than through whatever its path names at the moment.
type source struct {
	dir  *os.File
	fd   int
	path string
}

func openSource(path string) (*source, error) {
	d, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("open base %s: %w", quote(path), unwrapPath(err))
	}
	return &source{dir: d, fd: int(d.Fd()), path: path}, nil
}

func (s *source) close() { s.dir.Close() }

func (s *source) abs(rel string) string {
	return s.path + string(filepath.Separator) + filepath.FromSlash(rel)
}

// sourceFlags opens a source file for reading without following a symlink
// in its last component. O_NONBLOCK keeps the open from hanging if a FIFO
// was put where the walk saw a regular file; it changes nothing for a
// regular file.
const sourceFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC

// setTimes sets the mtime of path without following it if it is a symlink.
// The atime is set to the staging time: the base's atime is not recorded
// and no tool relies on it.
func setTimes(path string, atimeNs, mtimeNs int64) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atimeNs), unix.NsecToTimespec(mtimeNs)}
	for {
		err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// removeTree removes dir and everything beneath it, never following a
// symlink. A command may leave directories without write or search
// permission; for anyone but root that stops os.RemoveAll, so on failure
// every directory is given u+rwx and the removal is tried once more.
func removeTree(ctx context.Context, dir string) error {
	clean := filepath.Clean(dir)
	if !filepath.IsAbs(clean) || clean == string(filepath.Separator) {
		return fmt.Errorf("refusing to remove staged workspace %s: not an absolute path below /", quote(dir))
	}
	err := os.RemoveAll(clean)
	if err == nil {
		return nil
	}
	if uerr := unlock(ctx, clean); uerr != nil {
		return fmt.Errorf("remove staged workspace %s: %w (making its directories writable failed: %v)", quote(dir), unwrapPath(err), uerr)
	}
	if err := os.RemoveAll(clean); err != nil {
		return fmt.Errorf("remove staged workspace %s: %w; remove it by hand", quote(dir), err)
	}
	return nil
}

// unlock gives dir and every directory beneath it u+rwx. It works on
// directory descriptors and never follows a symlink, so a link left in the
// tree cannot turn it into a chmod of something outside.
func unlock(ctx context.Context, dir string) error {
	parent, name := filepath.Split(dir)
	pfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: parent, Err: err}
	}
	defer unix.Close(pfd)
	return unlockAt(ctx, pfd, name, dir)
}

func unlockAt(ctx context.Context, dirfd int, name, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	mode := uint32(st.Mode)
	if mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	if mode&0o700 != 0o700 {
		if err := chmodAt(dirfd, name, mode&0o7777|0o700); err != nil {
			return &fs.PathError{Op: "chmod", Path: path, Err: err}
		}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR {
			return nil // replaced meanwhile: RemoveAll handles whatever is there now
		}
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	d := os.NewFile(uintptr(fd), path)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, unwrapPath(err))
	}
	for _, n := range names {
		if err := unlockAt(ctx, fd, n, filepath.Join(path, n)); err != nil {
			return err
		}
	}
	return nil
}

// unwrapPath drops the *PathError wrapper whose path the message already
// names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// removeDetached starts `rm -rf` on path in its own session and does not
// wait for it: it outlives this process. A tree it cannot remove (a
// directory the command left without write permission, for a user who is
// not root) stays in the transaction's state, which gc removes.
func removeDetached(path string) error {
	cmd := exec.Command("rm", "-rf", "--", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	// Reap it if this process lives long enough; never block on it.
	go cmd.Wait()
	return nil
}

// scrubDir makes a directory a command touched what a new one made by
// staging is: owned by this process's user and group, with no extended
// attribute a command could have set. Its mode and times are set
// afterwards. (Inode flags set with chattr are not cleared: docs/backends.md,
// Recycled staging.)
func scrubDir(p string) error {
	// Only what differs is set: a chown moves the ctime even when it
	// changes nothing, and a directory whose ctime moved after its tree
	// was measured is scrubbed again by the next refresh, and the next.
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil || int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
		if err := unix.Lchown(p, os.Getuid(), os.Getgid()); err != nil && err != unix.EPERM {
			return fmt.Errorf("chown %s: %w", quote(p), err)
		}
	}
	size, err := unix.Llistxattr(p, nil)
	if err != nil || size == 0 {
		return nil // none, or none this file system keeps
	}
	buf := make([]byte, size)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		return fmt.Errorf("list extended attributes of %s: %w", quote(p), err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if !settable(name) {
			continue
		}
		if err := unix.Lremovexattr(p, name); err != nil && err != unix.ENODATA {
			return fmt.Errorf("remove extended attribute %s of %s: %w", name, quote(p), err)
		}
	}
	return nil
}

// settable reports whether a command could have set the extended
// attribute: user attributes and ACLs, and as root trusted.* and
// security.* too. The security label is the system's, and a new file gets
// one too.
func settable(name string) bool {
	return strings.HasPrefix(name, "user.") || strings.HasPrefix(name, "system.posix_acl_") ||
		(os.Geteuid() == 0 && name != "security.selinux" && (strings.HasPrefix(name, "trusted.") || strings.HasPrefix(name, "security.")))
}

// hasSettableXattr reports whether the open file carries an extended
// attribute a command could have set (or cannot be asked).
func hasSettableXattr(f *os.File) bool {
	size, err := unix.Flistxattr(int(f.Fd()), nil)
	if err == unix.ENOTSUP {
		return false
	}
	if err != nil {
		return true
	}
	if size == 0 {
		return false
	}
	buf := make([]byte, size)
	n, err := unix.Flistxattr(int(f.Fd()), buf)
	if err != nil {
		return true
	}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if settable(name) {
			return true
		}
	}
	return false
}

// linkCount is how many names the open file has.
func linkCount(f *os.File) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return uint64(st.Nlink), nil
}
