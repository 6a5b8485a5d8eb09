package state

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Identity says which directory a base is, in a form that survives a
// reboot where the file system allows it. Device numbers do not: USB
// disks, LVM and device-mapper volumes, loop devices and btrfs subvolumes
// get whichever number is free when they appear. So a directory is named
// by its file system's own identity and its inode (FS and Ino); Dev is
// the device number stat reports now, kept for the checks within one
// boot and for state written before FS existed.
type Identity struct {
	// FS names the file system: "fsid-<type>-<f_fsid>" where statfs's
	// f_fsid comes from the file system itself (ext2/3/4: its UUID;
	// btrfs: its UUID and the subvolume), "uuid-<type>-<uuid>" where the
	// kernel gives the superblock's UUID (FS_IOC_GETFSUUID: xfs), and
	// "dev-<device>" everywhere else: there the identity is only as good
	// as the device number (tmpfs, NFS, FUSE, FAT; macOS). "" in state
	// written by earlier versions, which recorded the device alone.
	FS  string
	Dev uint64
	Ino uint64
}

// Key is the name of the state directory of the directory with this
// identity: FS and the inode in hex, e.g.
// fsid-0000ef53-c26804e01e9dd467-0000000000000002.
func (id Identity) Key() string {
	fsName := id.FS
	if fsName == "" {
		fsName = devFS(id.Dev)
	}
	return fmt.Sprintf("%s-%016x", fsName, id.Ino)
}

// Stable reports whether the identity survives the file system being
// mounted again under another device number.
func (id Identity) Stable() bool { return id.FS != "" && !strings.HasPrefix(id.FS, "dev-") }

func devFS(dev uint64) string { return fmt.Sprintf("dev-%016x", dev) }

// Match is how an identity recorded earlier relates to one measured now.
type Match int

const (
	// Other: provably another directory.
	Other Match = iota
	// Same: the same directory.
	Same
	// Unknown: the same inode number under another device number, and
	// nothing stable to tell whether the file system is the same one
	// mounted again: the recorded identity is a device number (state of an
	// earlier version, or a file system that has no identity of its own).
	Unknown
)

// Match says whether now, measured at a path, is the directory id was
// recorded for. Two stable identities decide alone, whatever the device
// numbers; otherwise the device and inode do, and the same inode under
// another device is Unknown: fail-closed callers treat it as Other unless
// the user confirms it (recover --moved).
func (id Identity) Match(now Identity) Match {
	if id.Stable() && now.Stable() {
		if id.FS == now.FS && id.Ino == now.Ino {
			return Same
		}
		return Other
	}
	switch {
	case id.Dev == now.Dev && id.Ino == now.Ino:
		return Same
	case id.Ino == now.Ino:
		return Unknown
	}
	return Other
}

// String is the identity as messages show it.
func (id Identity) String() string {
	if id.Stable() {
		return fmt.Sprintf("file system %s, inode %d", id.FS, id.Ino)
	}
	return fmt.Sprintf("device %s, inode %d", devString(id.Dev), id.Ino)
}

// Identify measures the identity of the directory at path, following
// symlinks (callers pass resolved paths). Anything but a directory is an
// error: a path recorded earlier may name a FIFO now, which a plain open
// would wait on.
func Identify(path string) (Identity, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return Identity{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	return IdentifyFile(f)
}

// IdentifyFile measures the identity of the open file f: of the very
// directory a descriptor holds, not of whatever a path names now.
func IdentifyFile(f *os.File) (Identity, error) {
	fi, err := f.Stat()
	if err != nil {
		return Identity{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Identity{}, fmt.Errorf("%s: no device and inode", f.Name())
	}
	id := Identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
	id.FS = fsIdentity(f, id.Dev)
	return id, nil
}
