package safefs

import (
	"strconv"
	"strings"
	"sync"

	"github.com/airlockdev/airlock/internal/fault"
	"golang.org/x/sys/unix"
)

// wholeSyncStands reports whether one syncfs(2) on the file system of fd
// makes durable, and reports the failure of, every write an fsync of each
// file and directory would: the kernel reports write-back errors to
// syncfs since 5.8 (before, it returned 0 whatever failed), and the file
// system is one whose sync_fs commits its journal or has none to commit.
func wholeSyncStands(fd int) bool {
	if fault.Off("syncfs") || !syncfsReportsErrors() {
		return false
	}
	var st unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Fstatfs(fd, &st) }); err != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, // ext2, ext3 and ext4 share it
		unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC,
		unix.BCACHEFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}

// syncfsReportsErrors: Linux 5.8 or later.
var syncfsReportsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	major, minor, ok := kernelVersion(unix.ByteSliceToString(u.Release[:]))
	return ok && (major > 5 || major == 5 && minor >= 8)
})

// kernelVersion parses the start of a release string such as
// "6.8.0-45-generic".
func kernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	end := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(parts[1])
	}
	minor, err2 := strconv.Atoi(parts[1][:end])
	return major, minor, err1 == nil && err2 == nil
}

func syncfs(fd int) error { return ignoringEINTR(func() error { return unix.Syncfs(fd) }) }

func dupFd(fd int) (int, error) {
	return ignoringEINTR2(func() (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) })
}
