package fsclock

import (
	"bufio"
	"fmt"
	"os"
	"strings"
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
	fi := fsInfo{magic: sfs.Type, fsid: sfs.Fsid.Val, dev: st.Dev}
	fi.name = mountType(st.Dev)
	if fi.name == "" {
		fi.name = fmt.Sprintf("file system type %#x", sfs.Type)
	}
	return fi, nil
}

// mountType finds the type of the file system on device dev in
// /proc/self/mountinfo ("ext4" where statfs says only ext2/3/4).
func mountType(dev uint64) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	want := fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent maj:min root mountpoint options [optional...] - type source super
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[2] != want {
			continue
		}
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				return fields[i+1]
			}
		}
	}
	return ""
}

// noCtime reports the file systems that store no change time: Linux shows
// their mtime as ctime once the inode is read from disk again.
func noCtime(fi fsInfo) bool {
	switch uint32(fi.magic) {
	case unix.MSDOS_SUPER_MAGIC, unix.EXFAT_SUPER_MAGIC:
		return true
	}
	return false
}

func mtimeOf(st *unix.Stat_t) int64 { return st.Mtim.Nano() }
func ctimeOf(st *unix.Stat_t) int64 { return st.Ctim.Nano() }

// coarseTickNs is the step of the kernel's coarse clock, which stamps
// file times (a scheduler tick).
var coarseTickNs = sync.OnceValue(func() int64 {
	var ts unix.Timespec
	if err := unix.ClockGetres(unix.CLOCK_REALTIME_COARSE, &ts); err != nil || ts.Nano() <= 0 {
		return 10_000_000 // HZ=100, the coarsest tick Linux is built with
	}
	return ts.Nano()
})

var kernel = sync.OnceValue(func() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
})
