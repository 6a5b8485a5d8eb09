package state

import "golang.org/x/sys/unix"

// isMountRoot reports whether path is the root of a mount. A bind mount of
// a directory on the same filesystem has the same device number as its
// parent, so the device comparison alone would miss it; statx knows.
func isMountRoot(path string) bool {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, 0, &stx); err != nil {
		return false
	}
	return stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}
