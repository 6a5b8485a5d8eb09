package manifest

import (
	"io/fs"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

func fillSys(e *Entry, fi fs.FileInfo) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		e.MtimeNs = fi.ModTime().UnixNano()
		return
	}
	e.MtimeNs = st.Mtim.Nano()
	e.CtimeNs = st.Ctim.Nano()
	e.Ino = st.Ino
	e.Dev = uint64(st.Dev)
}

func statTimes(st *unix.Stat_t) (mtime, ctime int64) {
	return st.Mtim.Nano(), st.Ctim.Nano()
}

// direntBufs recycles getdents buffers: a walk reads thousands of
// directories, and a fresh buffer for each was most of its garbage.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readNames lists a directory's names, "." and ".." left out.
func readNames(fd int) ([]string, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
