//go:build linux || darwin

package safefs

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// Info is what Lstat reports about one path, without following a symlink.
type Info struct {
	// Mode is in os form: the type bits, the permission bits, and setuid,
	// setgid and sticky, as os.Lstat would report them.
	Mode    fs.FileMode
	Size    int64
	MtimeNs int64
	CtimeNs int64
	Ino     uint64
	Dev     uint64
	Nlink   uint64
}

func infoFromStat(st *unix.Stat_t) Info {
	return Info{
		Mode:    FileMode(uint32(st.Mode)),
		Size:    st.Size,
		MtimeNs: st.Mtim.Nano(),
		CtimeNs: st.Ctim.Nano(),
		Ino:     uint64(st.Ino),
		Dev:     uint64(st.Dev),
		Nlink:   uint64(st.Nlink),
	}
}

// FileMode converts a raw st_mode the way package os does, so that an Info
// (or a manifest entry measured with fstatat) and an os.FileInfo of the same
// file agree.
func FileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// sysMode converts permission bits plus setuid, setgid and sticky to the
// form chmod(2) and mkdir(2) take; type bits are ignored.
func sysMode(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		o |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		o |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		o |= unix.S_ISVTX
	}
	return o
}
