package stage

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

var errCrossDevice = unix.EXDEV

// cloneInto replaces the file at path (which out has open) with a clone of
// in made by fclonefileat, and returns the clone opened for writing:
// clonefile creates its destination, so the empty file out names is
// removed first.
func cloneInto(out, in *os.File, path string) (*os.File, error) {
	out.Close()
	if err := os.Remove(path); err != nil {
		return nil, err
	}
	for {
		err := unix.Fclonefileat(int(in.Fd()), unix.AT_FDCWD, path, unix.CLONE_NOFOLLOW|unix.CLONE_NOOWNERCOPY)
		switch err {
		case nil:
			return os.OpenFile(path, os.O_WRONLY|unix.O_NOFOLLOW, 0)
		case unix.EINTR:
			continue
		case unix.ENOTSUP:
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
	return unix.ByteSliceToString(st.Fstypename[:])
}
