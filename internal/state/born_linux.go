package state

import "golang.org/x/sys/unix"

// birthTime is the directory's birth time in ns since the epoch, or 0
// where the file system does not record one.
func birthTime(path string) int64 {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME, &stx); err != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec)
}
