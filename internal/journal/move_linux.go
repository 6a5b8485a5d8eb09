package journal

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// futimens sets the access and modification times of the file fd to
// mtimeNs (utimensat with no name: the descriptor's own file).
func futimens(fd int, mtimeNs int64) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(mtimeNs), unix.NsecToTimespec(mtimeNs)}
	for {
		_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}
