package stage

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

var errCrossDevice = unix.EXDEV

// cloneInto makes out's content a clone of in's with FICLONE. out is
// emptied first: a clone replaces the whole file, and a retry must not
// keep a tail from an earlier, longer version.
func cloneInto(out, in *os.File, _ string) (*os.File, error) {
	if err := out.Truncate(0); err != nil {
		return nil, err
	}
	for {
		err := unix.IoctlFileClone(int(out.Fd()), int(in.Fd()))
		switch err {
		case nil:
			return nil, nil
		case unix.EINTR:
			continue
		case unix.EOPNOTSUPP, unix.ENOTTY, unix.EINVAL, unix.ENOSYS:
			// EINVAL: the file system supports clones but not of this
			// file (btrfs nodatacow), or not at all on older kernels.
			return nil, fmt.Errorf("%w (%v)", errNoClone, err)
		}
		return nil, err
	}
}

// fsName names the file system that holds path, for messages.
func fsName(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "its file system"
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC:
		return "ext2/3/4"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	case unix.NFS_SUPER_MAGIC:
		return "nfs"
	case 0x2fc12fc1:
		return "zfs"
	case 0xf2f52010:
		return "f2fs"
	}
	return fmt.Sprintf("a file system of type %#x", st.Type)
}
