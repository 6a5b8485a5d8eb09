package safefs

import "golang.org/x/sys/unix"

// notInherited are the inode flags (FS_IOC_GETFLAGS) of a directory that
// a file created in it does not take from it. Every other flag may be
// inherited (synchronous writes, noatime, nodump, no copy-on-write,
// compression, data journaling, encryption, a project ID, case folding)
// and so make a file moved in differ from one created there.
// The values are <linux/fs.h>'s: a hashed directory index, extents,
// inline data, and the allocator's hint for a top of a hierarchy.
const notInherited = 0x00001000 | 0x00080000 | 0x10000000 | 0x00020000

// adoptsFd reports whether the directory fd has neither a default ACL nor
// inode flags that new files inherit.
func adoptsFd(fd int) bool {
	if _, err := unix.Fgetxattr(fd, "system.posix_acl_default", nil); err == nil || (err != unix.ENODATA && err != unix.EOPNOTSUPP) {
		return false
	}
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	switch err {
	case nil:
		return flags&^notInherited == 0
	case unix.ENOTTY, unix.EOPNOTSUPP, unix.EINVAL:
		return true // a file system without inode flags
	}
	return false
}
