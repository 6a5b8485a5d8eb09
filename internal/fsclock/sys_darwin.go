package fsclock

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

func stat(path string) (fsInfo, error) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return fsInfo{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fsInfo{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return fsInfo{name: unix.ByteSliceToString(sfs.Fstypename[:]), magic: int64(sfs.Type), fsid: sfs.Fsid.Val, dev: uint64(st.Dev)}, nil
}

// noCtime reports the file systems that store no change time (msdos and
// exfat show their mtime as ctime). Type numbers are not stable on macOS:
// the name decides.
func noCtime(fi fsInfo) bool { return fi.name == "msdos" || fi.name == "exfat" }

func mtimeOf(st *unix.Stat_t) int64 { return st.Mtim.Nano() }
func ctimeOf(st *unix.Stat_t) int64 { return st.Ctim.Nano() }

// coarseTickNs is the step assumed for the clock that stamps file times:
// macOS has no call that reports it.
func coarseTickNs() int64 { return 10_000_000 }

var kernel = sync.OnceValue(func() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
})
