package stage

import (
	"os"

	"golang.org/x/sys/unix"
)

// openFile opens a source file without following a symlink in its last
// component.
func (s *source) openFile(rel string) (*os.File, error) {
	return os.OpenFile(s.abs(rel), sourceFlags, 0)
}

// chmodAt changes the mode of name in dirfd without following a symlink,
// which Darwin's fchmodat supports directly.
func chmodAt(dirfd int, name string, mode uint32) error {
	return unix.Fchmodat(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW)
}

// setFileTimes sets a staged file's times by path: Darwin's futimes keeps
// only microseconds.
func setFileTimes(_ *os.File, path string, atimeNs, mtimeNs int64) error {
	return setTimes(path, atimeNs, mtimeNs)
}
