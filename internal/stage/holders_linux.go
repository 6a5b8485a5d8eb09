package stage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Holder is a process that can still reach a tree: its working or root
// directory, an open descriptor, a mapped file or a mount of its own lies
// in it.
type Holder struct {
	PID     int
	Command string
	How     string // "cwd", "root", "fd 7", "mapped", "mount /path", or why it could not be inspected
}

func (h Holder) String() string {
	return fmt.Sprintf("process %d (%s) holds it: %s", h.PID, h.Command, h.How)
}

// Holders looks through /proc for processes that can still reach a tree
// whose inodes are ids. A process of this user that started after since
// and cannot be inspected is reported too: the check fails closed for
// anything the tree's last command could have started. Processes that
// started before since cannot have been given the tree by its command.
func Holders(ids FileIDs, since time.Time) ([]Holder, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	boot, tick, err := bootClock()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	selfNS, _ := os.Readlink("/proc/self/ns/mnt")
	var devs = map[uint64]bool{}
	for _, id := range ids {
		devs[id.Dev] = true
	}
	var out []Holder
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		if h, ok := holds(pid, ids, devs, selfNS, since, boot, tick); ok {
			out = append(out, h)
		}
	}
	return out, nil
}

func holds(pid int, ids FileIDs, devs map[uint64]bool, selfNS string, since time.Time, boot time.Time, tick int64) (Holder, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	comm, err := os.ReadFile(dir + "/comm")
	if err != nil {
		return Holder{}, false // gone
	}
	h := Holder{PID: pid, Command: strings.TrimSpace(string(comm))}
	in := func(path string) bool {
		var st unix.Stat_t
		return unix.Stat(path, &st) == nil && ids.Has(FileID{uint64(st.Dev), st.Ino})
	}
	for _, l := range []string{"cwd", "root"} {
		if in(dir + "/" + l) {
			h.How = l
			return h, true
		}
	}
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil {
		if os.IsNotExist(err) {
			return Holder{}, false
		}
		// Not ours to see. A process that started after the tree's
		// command began could be one of its own (through sudo, say).
		if started, ok := startTime(dir, boot, tick); !ok || started.After(since) {
			h.How = "cannot be inspected (" + err.Error() + ")"
			return h, true
		}
		return Holder{}, false
	}
	for _, fd := range fds {
		if in(dir + "/fd/" + fd.Name()) {
			h.How = "fd " + fd.Name()
			return h, true
		}
	}
	if mappedFrom(dir+"/maps", ids) {
		h.How = "mapped file"
		return h, true
	}
	// A process in a mount namespace of its own (same-path mode) may have
	// the tree mounted somewhere, reachable by a path that names nothing
	// here.
	if ns, err := os.Readlink(dir + "/ns/mnt"); err == nil && ns != selfNS {
		if mp, ok := mountedFrom(dir, ids, devs); ok {
			h.How = "mount " + mp
			return h, true
		}
	}
	return Holder{}, false
}

// mappedFrom reports whether a process maps a file that is one of ids.
func mappedFrom(maps string, ids FileIDs) bool {
	f, err := os.Open(maps)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		ino, err := strconv.ParseUint(fields[4], 10, 64)
		if err != nil || ino == 0 {
			continue
		}
		maj, min, ok := strings.Cut(fields[3], ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(maj, 16, 32)
		mi, err2 := strconv.ParseUint(min, 16, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		if ids.Has(FileID{unix.Mkdev(uint32(ma), uint32(mi)), ino}) {
			return true
		}
	}
	return false
}

// mountedFrom looks through a process's mounts on the tree's file system
// for one whose root, seen from inside its namespace, is in the tree.
func mountedFrom(dir string, ids FileIDs, devs map[uint64]bool) (string, bool) {
	b, err := os.ReadFile(dir + "/mountinfo")
	if err != nil {
		return "", false
	}
	for line := range bytes.Lines(b) {
		// id parent major:minor root mountpoint ...
		fields := strings.Fields(string(line))
		if len(fields) < 5 {
			continue
		}
		maj, min, ok := strings.Cut(fields[2], ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(min, 10, 32)
		if err1 != nil || err2 != nil || !devs[unix.Mkdev(uint32(ma), uint32(mi))] {
			continue
		}
		mp := unescapeMount(fields[4])
		var st unix.Stat_t
		if unix.Stat(dir+"/root"+mp, &st) == nil && ids.Has(FileID{uint64(st.Dev), st.Ino}) {
			return mp, true
		}
	}
	return "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// bootClock reads when the system booted and how long a clock tick is, to
// turn /proc/PID/stat's start times into times.
func bootClock() (time.Time, int64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			s, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				break
			}
			// USER_HZ is 100 on every Linux ABI Go supports.
			return time.Unix(s, 0), int64(time.Second / 100), nil
		}
	}
	return time.Time{}, 0, fmt.Errorf("/proc/stat has no btime line")
}

// startTime reads when a process started.
func startTime(dir string, boot time.Time, tick int64) (time.Time, bool) {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return time.Time{}, false
	}
	// The command name may hold spaces and parentheses: fields start
	// after the last ')'.
	k := bytes.LastIndexByte(b, ')')
	if k < 0 {
		return time.Time{}, false
	}
	fields := strings.Fields(string(b[k+1:]))
	// starttime is field 22 of the line, the 20th after the name.
	if len(fields) < 20 {
		return time.Time{}, false
	}
	t, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	// btime has a second's resolution: count a start within that second
	// as after.
	return boot.Add(time.Duration(t * tick)).Add(time.Second), true
}
