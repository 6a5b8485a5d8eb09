package safefs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// wholeSyncStands is false on macOS: it has no syncfs(2), and its sync(2)
// does not wait for the data to reach the disk. Each file and directory is
// fsync'd (F_FULLFSYNC, as Go's File.Sync does there).
func wholeSyncStands(int) bool { return false }

func syncfs(int) error { return errors.ErrUnsupported }

func dupFd(fd int) (int, error) {
	return ignoringEINTR2(func() (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) })
}
