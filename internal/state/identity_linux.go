package state

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The file systems whose own identity is known to be stable across
// mounts and to name one superblock, with inode numbers that are the file
// system's own (not numbered afresh at each mount, as FAT's are).
const (
	ext4Magic  = 0xef53     // ext2, ext3 and ext4: f_fsid is their UUID's two halves xor'ed
	btrfsMagic = 0x9123683e // f_fsid is the UUID mixed with the subvolume's id: subvolumes, whose inode numbers repeat, differ
	xfsMagic   = 0x58465342 // f_fsid is the device number; the superblock's UUID is stable
)

// fsGetUUID is FS_IOC_GETFSUUID (Linux 6.5): _IOR(0x15, 0, struct
// fsuuid2), a length byte and 16 bytes of UUID.
const fsGetUUID = 0x80111500

// fsIdentity is Identity.FS for the file system f is on, whose device
// number is dev. Anything that cannot be measured, or that is not known
// to be stable, is the device number: never worse than before.
func fsIdentity(f *os.File, dev uint64) string {
	rc, err := f.SyscallConn()
	if err != nil {
		return devFS(dev)
	}
	id := devFS(dev)
	rc.Control(func(fd uintptr) {
		var s unix.Statfs_t
		if unix.Fstatfs(int(fd), &s) != nil {
			return
		}
		magic := uint32(s.Type)
		switch magic {
		case ext4Magic, btrfsMagic:
			fsid := uint64(uint32(s.Fsid.Val[0])) | uint64(uint32(s.Fsid.Val[1]))<<32
			// A zero UUID gives a zero fsid; a kernel that derived it
			// from the device after all gives st_dev's own encoding.
			if fsid != 0 && fsid != dev {
				id = fmt.Sprintf("fsid-%08x-%016x", magic, fsid)
			}
		case xfsMagic:
			if u, ok := superUUID(fd); ok {
				id = fmt.Sprintf("uuid-%08x-%x", magic, u)
			}
		}
	})
	return id
}

// superUUID asks the kernel for the superblock's UUID; ok is false before
// Linux 6.5 and for a UUID that is all zeros (none).
func superUUID(fd uintptr) ([]byte, bool) {
	var u struct {
		Len  uint8
		UUID [16]byte
	}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, fsGetUUID, uintptr(unsafe.Pointer(&u))); errno != 0 {
		return nil, false
	}
	if u.Len == 0 || int(u.Len) > len(u.UUID) {
		return nil, false
	}
	for _, b := range u.UUID[:u.Len] {
		if b != 0 {
			return u.UUID[:u.Len], true
		}
	}
	return nil, false
}

func devString(dev uint64) string { return fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev)) }
