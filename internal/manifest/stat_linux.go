package manifest

import (
	"io/fs"
	"syscall"
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
