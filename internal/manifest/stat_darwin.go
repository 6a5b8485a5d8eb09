package manifest

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func fillSys(e *Entry, fi fs.FileInfo) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		e.MtimeNs = fi.ModTime().UnixNano()
		return
	}
	e.MtimeNs = st.Mtimespec.Nano()
	e.CtimeNs = st.Ctimespec.Nano()
	e.Ino = st.Ino
	e.Dev = uint64(st.Dev)
}

func statTimes(st *unix.Stat_t) (mtime, ctime int64) {
	return st.Mtim.Nano(), st.Ctim.Nano()
}

// readNames lists a directory's names, "." and ".." left out. Darwin has
// no getdents; the os package reads a duplicate of the descriptor.
func readNames(fd int) ([]string, error) {
	d, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), "")
	defer f.Close()
	return f.Readdirnames(-1)
}
