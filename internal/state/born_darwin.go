package state

import "golang.org/x/sys/unix"

// birthTime is the directory's birth time in ns since the epoch, or 0
// where the file system does not record one.
func birthTime(path string) int64 {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0
	}
	return st.Btim.Nano()
}
