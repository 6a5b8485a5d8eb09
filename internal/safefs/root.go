//go:build linux || darwin

package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Root is a directory opened for traversal-safe access. Its methods may be
// called from several goroutines at once; Close waits for the calls in
// flight and makes later ones fail with os.ErrClosed, so that a closed
// descriptor number, reused by another open, is never acted on.
type Root struct {
	path string
	mu   sync.RWMutex
	fd   int // -1 once closed
}

// OpenRoot opens dir, which must be a directory, as a Root. dir itself is
// reached through the caller's path as given (a symlink in it is followed,
// as the caller chose that path); everything beneath it is not.
func OpenRoot(dir string) (*Root, error) {
	fd, err := ignoringEINTR2(func() (int, error) {
		return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "openroot", Path: dir, Err: err}
	}
	return &Root{path: dir, fd: fd}, nil
}

// Close closes the root's descriptor.
func (r *Root) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fd < 0 {
		return &fs.PathError{Op: "close", Path: r.path, Err: os.ErrClosed}
	}
	err := unix.Close(r.fd)
	r.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: r.path, Err: err}
	}
	return nil
}

// Path returns the directory the root was opened with, as given.
func (r *Root) Path() string { return r.path }

// Lstat describes rel ("" = the root itself) without following a symlink
// in any component. A missing path gives an error that matches
// fs.ErrNotExist.
func (r *Root) Lstat(rel string) (Info, error) {
	var st unix.Stat_t
	err := r.do("lstat", rel, true, func(dirfd int, name string) error {
		if name == "" {
			return ignoringEINTR(func() error { return unix.Fstat(dirfd, &st) })
		}
		return ignoringEINTR(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	})
	if err != nil {
		return Info{}, err
	}
	return infoFromStat(&st), nil
}

// Readlink returns the target of the symlink rel.
func (r *Root) Readlink(rel string) (string, error) {
	var target string
	err := r.do("readlink", rel, false, func(dirfd int, name string) error {
		for size := 256; ; size *= 2 {
			buf := make([]byte, size)
			n, err := ignoringEINTR2(func() (int, error) { return unix.Readlinkat(dirfd, name, buf) })
			if err != nil {
				return err
			}
			if n < size {
				target = string(buf[:n])
				return nil
			}
		}
	})
	return target, err
}

// Open opens rel ("" = the root itself) read-only. It must be a regular
// file or a directory; a symlink as the last component fails with
// ErrSymlink.
func (r *Root) Open(rel string) (*os.File, error) {
	var f *os.File
	err := r.do("open", rel, true, func(dirfd int, name string) error {
		if name == "" {
			name = "."
		}
		// O_NONBLOCK so that a FIFO cannot block the open; it is
		// refused just below and the flag cleared for a real file.
		fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return finalSymlink(err)
		}
		var st unix.Stat_t
		if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
			unix.Close(fd)
			return err
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
			unix.Close(fd)
			return fmt.Errorf("not a regular file or directory (%v)", FileMode(uint32(st.Mode)).Type())
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return err
		}
		f = os.NewFile(uintptr(fd), r.full(rel))
		return nil
	})
	return f, err
}

// Mkdir creates the directory rel with perm (less the umask, as mkdir(2)
// does); its parent must exist.
func (r *Root) Mkdir(rel string, perm fs.FileMode) error {
	return r.do("mkdir", rel, false, func(dirfd int, name string) error {
		return ignoringEINTR(func() error { return unix.Mkdirat(dirfd, name, sysMode(perm)) })
	})
}

// CreateTemp creates a new file with mode 0600 in the directory dirRel
// ("" = the root), open for reading and writing, and returns it with its
// path relative to the root. As in os.CreateTemp, the last "*" in pattern
// is replaced by a random string, or the string is appended.
func (r *Root) CreateTemp(dirRel, pattern string) (*os.File, string, error) {
	shown := joinRel(dirRel, pattern)
	if err := checkRelOrRoot(dirRel); err != nil {
		return nil, "", r.pathErr("createtemp", shown, err)
	}
	if strings.ContainsAny(pattern, "/\x00") {
		return nil, "", r.pathErr("createtemp", shown, fmt.Errorf("%w: pattern holds a slash or NUL byte", ErrEscape))
	}
	prefix, suffix := pattern, ""
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.fd < 0 {
		return nil, "", r.pathErr("createtemp", shown, os.ErrClosed)
	}
	dir, err := r.openDir(splitRel(dirRel), false)
	if err != nil {
		return nil, "", r.pathErr("createtemp", shown, err)
	}
	defer dir.close()
	for range 10000 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10) + suffix
		fd, err := openat(dir.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST {
			continue
		}
		rel := joinRel(dirRel, name)
		if err != nil {
			return nil, "", r.pathErr("createtemp", rel, err)
		}
		return os.NewFile(uintptr(fd), r.full(rel)), rel, nil
	}
	return nil, "", r.pathErr("createtemp", shown, errors.New("no unused name after 10000 tries"))
}

// Rename renames fromRel to toRel with renameat(2), which follows neither
// name: a symlink is renamed as itself, and a file or symlink at toRel is
// replaced atomically.
func (r *Root) Rename(fromRel, toRel string) error {
	return r.rename("rename", fromRel, toRel, 0)
}

// Symlink creates rel as a symlink to target; it fails if rel exists.
// target is stored as given and never resolved here.
func (r *Root) Symlink(target, rel string) error {
	return r.do("symlink", rel, false, func(dirfd int, name string) error {
		return ignoringEINTR(func() error { return unix.Symlinkat(target, dirfd, name) })
	})
}

// Remove removes rel, which must not be a directory. A symlink is removed
// itself, never its target.
func (r *Root) Remove(rel string) error {
	return r.do("remove", rel, false, func(dirfd int, name string) error {
		return ignoringEINTR(func() error { return unix.Unlinkat(dirfd, name, 0) })
	})
}

// RemoveDir removes the empty directory rel. A directory that is not empty
// gives an error that matches syscall.ENOTEMPTY.
func (r *Root) RemoveDir(rel string) error {
	return r.do("removedir", rel, false, func(dirfd int, name string) error {
		err := ignoringEINTR(func() error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
		if err == unix.EEXIST {
			// POSIX lets rmdir say EEXIST for "not empty".
			err = unix.ENOTEMPTY
		}
		return err
	})
}

// Chmod sets rel's permission bits and its setuid, setgid and sticky bits
// from mode. It never follows rel if it is a symlink: that fails with
// ErrSymlink and leaves the target alone. On Linux 6.6 and later this is
// one fchmodat2(AT_SYMLINK_NOFOLLOW) call; on older kernels rel, if it is a
// regular file or directory, is opened O_NOFOLLOW and fchmod'ed, which
// needs read permission on it; on macOS it is fchmodat(AT_SYMLINK_NOFOLLOW).
// Nothing goes through /proc/self/fd.
func (r *Root) Chmod(rel string, mode fs.FileMode) error {
	return r.do("chmod", rel, false, func(dirfd int, name string) error {
		return chmodAt(dirfd, name, sysMode(mode))
	})
}

// Chtimes sets rel's modification and access times to mtimeNs
// (nanoseconds since the Unix epoch). A symlink gets its own times set,
// never its target's.
func (r *Root) Chtimes(rel string, mtimeNs int64) error {
	return r.do("chtimes", rel, false, func(dirfd int, name string) error {
		t := unix.NsecToTimespec(mtimeNs)
		return ignoringEINTR(func() error {
			return unix.UtimesNanoAt(dirfd, name, []unix.Timespec{t, t}, unix.AT_SYMLINK_NOFOLLOW)
		})
	})
}

// SyncDir fsyncs the directory rel ("" = the root), making the names
// created, renamed or removed in it durable.
func (r *Root) SyncDir(rel string) error {
	if err := checkRelOrRoot(rel); err != nil {
		return r.pathErr("fsync", rel, err)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.fd < 0 {
		return r.pathErr("fsync", rel, os.ErrClosed)
	}
	dir, err := r.openDir(splitRel(rel), true)
	if err != nil {
		return r.pathErr("fsync", rel, err)
	}
	defer dir.close()
	if err := fsync(dir.fd); err != nil {
		return r.pathErr("fsync", rel, err)
	}
	return nil
}

// SyncFile fsyncs the file rel, which must not be a symlink.
func (r *Root) SyncFile(rel string) error {
	return r.do("fsync", rel, false, func(dirfd int, name string) error {
		fd, err := openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			return finalSymlink(err)
		}
		defer unix.Close(fd)
		return fsync(fd)
	})
}

// do checks rel, opens its parent beneath the root without following any
// symlink, and calls fn with the parent's descriptor and rel's last
// component. With rootOK, rel may be "" and fn gets the root's descriptor
// and an empty name.
func (r *Root) do(op, rel string, rootOK bool, fn func(dirfd int, name string) error) error {
	check := checkRel
	if rootOK {
		check = checkRelOrRoot
	}
	if err := check(rel); err != nil {
		return r.pathErr(op, rel, err)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.fd < 0 {
		return r.pathErr(op, rel, os.ErrClosed)
	}
	if rel == "" {
		if err := fn(r.fd, ""); err != nil {
			return r.pathErr(op, rel, err)
		}
		return nil
	}
	comps := splitRel(rel)
	dir, err := r.openDir(comps[:len(comps)-1], false)
	if err != nil {
		return r.pathErr(op, rel, err)
	}
	defer dir.close()
	if err := fn(dir.fd, comps[len(comps)-1]); err != nil {
		return r.pathErr(op, rel, err)
	}
	return nil
}

// dirHandle is a directory descriptor that is either the root's own (not to
// be closed) or one opened for a single call.
type dirHandle struct {
	fd    int
	owned bool
}

func (d dirHandle) close() {
	if d.owned {
		unix.Close(d.fd)
	}
}

// openDir opens the directory at comps beneath the root; the caller holds
// r.mu for reading.
func (r *Root) openDir(comps []string, readable bool) (dirHandle, error) {
	if len(comps) == 0 {
		return dirHandle{fd: r.fd}, nil
	}
	fd, err := resolveDir(r.fd, comps, readable)
	if err != nil {
		return dirHandle{}, err
	}
	return dirHandle{fd: fd, owned: true}, nil
}

// full is the path shown in errors: the root's path joined with rel as
// given, without cleaning, so that a rejected path reads as it was passed.
func (r *Root) full(rel string) string {
	switch {
	case rel == "":
		return r.path
	case strings.HasSuffix(r.path, "/"):
		return r.path + rel
	}
	return r.path + "/" + rel
}

func (r *Root) pathErr(op, rel string, err error) error {
	return &fs.PathError{Op: op, Path: r.full(rel), Err: err}
}

// finalSymlink turns the ELOOP of an O_NOFOLLOW open of a symlink into
// ErrSymlink.
func finalSymlink(err error) error {
	if err == unix.ELOOP {
		return ErrSymlink
	}
	return err
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	return ignoringEINTR2(func() (int, error) { return unix.Openat(dirfd, name, flags, mode) })
}

// ignoringEINTR retries a system call that a signal interrupted: the Go
// runtime installs its handlers with SA_RESTART, but not every call
// restarts.
func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if err != unix.EINTR {
			return err
		}
	}
}

func ignoringEINTR2[T any](fn func() (T, error)) (T, error) {
	for {
		v, err := fn()
		if err != unix.EINTR {
			return v, err
		}
	}
}
