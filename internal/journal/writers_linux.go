package journal

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// openWriter looks through /proc for a process, other than this one, with
// a descriptor open for writing on one of the inodes in ids (each named by
// the path it had in the base). Only descriptors whose path names an entry
// with the transaction's temporary prefix are examined closely: the files
// in ids carry such names while they are aside. Processes of other users
// are invisible to a user who is not root; a writable shared memory
// mapping is not a descriptor and is not seen either (docs/reliability.md).
func openWriter(ids map[fileID]string, marker string) *BusyError {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + p.Name()
		d, err := os.Open(dir + "/fd")
		if err != nil {
			continue // gone, or not ours to see
		}
		fds, _ := d.Readdirnames(-1)
		d.Close()
		for _, fd := range fds {
			link, err := os.Readlink(dir + "/fd/" + fd)
			if err != nil || !strings.Contains(link, marker) {
				continue
			}
			var st unix.Stat_t
			if unix.Stat(dir+"/fd/"+fd, &st) != nil {
				continue
			}
			rel, ok := ids[fileID{uint64(st.Dev), st.Ino}]
			if !ok || !openForWriting(dir+"/fdinfo/"+fd) {
				continue
			}
			comm, _ := os.ReadFile(dir + "/comm")
			return &BusyError{Path: rel, PID: pid, Command: strings.TrimSpace(string(comm))}
		}
	}
	return nil
}

// openForWriting reads a descriptor's access mode from its fdinfo. One
// that cannot be read counts as writing: the check fails closed.
func openForWriting(fdinfo string) bool {
	f, err := os.Open(fdinfo)
	if err != nil {
		return true
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "flags:")
		if !ok {
			continue
		}
		flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
		if err != nil {
			return true
		}
		return flags&unix.O_ACCMODE != unix.O_RDONLY
	}
	return true
}
