package holders

import (
	"bufio"
	"bytes"
	"fmt"
	"github.com/airlockdev/airlock/internal/manifest"
	"os"
	"path"
	"path/filepath"
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

// Find looks through /proc for processes that can still reach the tree
// at dir, whose inodes are ids: a working or root directory, a descriptor
// or a mapping of one of them, in any of a process's threads (a thread can
// unshare its working directory and descriptor table, and a zombie
// leader's own entries are empty), or a mount of any part of the tree in
// any mount namespace, this one included (a bind mount outlives the
// process that made it, and a mount over it hides it from a path lookup,
// not from mountinfo). A process of this user that started after since
// and cannot be inspected is reported too: the check fails closed for
// anything the tree's last command could have started. Processes that
// started before since cannot have been given the tree by its command.
func Find(dir string, ids FileIDs, since time.Time) ([]Holder, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	boot, tick, err := bootClock()
	if err != nil {
		return nil, err
	}
	root, err := treeInFS(dir)
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	sc := &scan{ids: ids, dir: dir, since: since, boot: boot, tick: tick, liveNS: map[string]bool{}}
	sc.nsfsDev, sc.anonDev = specialDevs()
	// The mount namespaces processes' threads are in (a thread can
	// unshare its own): one held only by a descriptor (or a bind of its
	// nsfs file) has mounts no thread's mountinfo shows.
	for _, p := range procs {
		for _, tdir := range threads("/proc/" + p.Name()) {
			if ns, err := os.Readlink(tdir + "/ns/mnt"); err == nil {
				sc.liveNS[ns] = true
			}
		}
	}
	var out []Holder
	// A loop device keeps its backing file open with no process's
	// descriptor to show for it.
	if loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file"); len(loops) > 0 {
		for _, l := range loops {
			b, err := os.ReadFile(l)
			if p := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)"); err == nil && strings.HasPrefix(p, dir+"/") {
				out = append(out, Holder{Command: "kernel", How: "loop device " + filepath.Base(filepath.Dir(filepath.Dir(l))) + " is backed by " + p})
			}
		}
	}
	// So does a swap file.
	if b, err := os.ReadFile("/proc/swaps"); err == nil {
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(unescapeMount(f[0]), dir+"/") {
				out = append(out, Holder{Command: "kernel", How: "swap file " + f[0]})
			}
		}
	}
	seenNS := map[string]bool{}
	if h, ok := sc.mountedIn("/proc/self", root); ok {
		h.PID, h.Command = self, "airlock"
		out = append(out, h)
	}
	if ns, err := os.Readlink("/proc/self/ns/mnt"); err == nil {
		seenNS[ns] = true
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		if h, ok := sc.holds(pid); ok {
			out = append(out, h)
			continue
		}
		// One look at each mount namespace's mounts, through any thread
		// in it (a zombie leader shows none).
		pdir := "/proc/" + p.Name()
		for _, tdir := range threads(pdir) {
			ns, err := os.Readlink(tdir + "/ns/mnt")
			if err != nil || seenNS[ns] {
				continue
			}
			seenNS[ns] = true
			if h, ok := sc.mountedIn(tdir, root); ok {
				h.PID = pid
				comm, _ := os.ReadFile(pdir + "/comm")
				h.Command = strings.TrimSpace(string(comm))
				out = append(out, h)
				break
			}
		}
	}
	return out, nil
}

// threads lists a process's task directories (one per thread).
func threads(pdir string) []string {
	tasks, err := os.ReadDir(pdir + "/task")
	if err != nil {
		return nil
	}
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = pdir + "/task/" + t.Name()
	}
	return out
}

// scan is one look through /proc.
type scan struct {
	ids     FileIDs
	dir     string // the tree
	since   time.Time
	boot    time.Time
	tick    int64
	liveNS  map[string]bool // mount namespaces some process is in ("mnt:[N]")
	nsfsDev uint64          // the device of namespace files
	anonDev uint64          // the device of anonymous inodes (io_uring, eventfd, ...)
}

// specialDevs finds the devices of namespace files and anonymous inodes,
// so that only descriptors of those are looked at more closely.
func specialDevs() (nsfs, anon uint64) {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/mnt", &st) == nil {
		nsfs = uint64(st.Dev)
	}
	if fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC); err == nil {
		if unix.Fstat(fd, &st) == nil {
			anon = uint64(st.Dev)
		}
		unix.Close(fd)
	}
	return nsfs, anon
}

// special decides a descriptor of a namespace file or an anonymous inode:
// a mount namespace no process is in (its mounts cannot be inspected, so
// it counts as holding the tree), or an io_uring instance with a file of
// the tree among its registered files (which no descriptor shows), or with
// any registered file at all in a process started since the tree's
// transaction opened (recent).
func (sc *scan) special(fdPath, fdinfo string, dev uint64, recent bool) (string, bool) {
	if dev != sc.nsfsDev && dev != sc.anonDev {
		return "", false
	}
	link, err := os.Readlink(fdPath)
	if err != nil {
		return "", false
	}
	switch {
	case strings.HasPrefix(link, "mnt:[") && !sc.liveNS[link]:
		return "a descriptor of mount namespace " + link + ", which no process is in: its mounts cannot be inspected", true
	case link == "anon_inode:[io_uring]":
		b, err := os.ReadFile(fdinfo)
		if err != nil {
			return "", false
		}
		inFiles := false
		for line := range strings.Lines(string(b)) {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "UserFiles:") {
				inFiles = true
				continue
			}
			if !inFiles {
				continue
			}
			k := strings.Index(line, ": ")
			if k < 0 || strings.TrimLeft(line[:k], "0123456789") != "" {
				inFiles = false // the next section
				continue
			}
			if p := line[k+2:]; p == sc.dir || strings.HasPrefix(p, sc.dir+"/") {
				return "a file of the tree registered with io_uring (" + p + ")", true
			} else if recent {
				// fdinfo names a registered file by a path, not an inode,
				// and a path through a detached mount names nothing here:
				// a process that may be the tree's command's cannot be
				// cleared by it.
				return "a file registered with io_uring (" + p + ") by a process started since the tree's transaction opened", true
			}
		}
	}
	return "", false
}

func (sc *scan) holds(pid int) (Holder, bool) {
	ids, since, boot, tick := sc.ids, sc.since, sc.boot, sc.tick
	dir := "/proc/" + strconv.Itoa(pid)
	comm, err := os.ReadFile(dir + "/comm")
	if err != nil {
		return Holder{}, false // gone
	}
	h := Holder{PID: pid, Command: strings.TrimSpace(string(comm))}
	recent := func() bool {
		started, ok := startTime(dir, boot, tick)
		return !ok || started.After(since)
	}
	var last unix.Stat_t
	in := func(path string) bool {
		last = unix.Stat_t{}
		return unix.Stat(path, &last) == nil && ids.Has(FileID{uint64(last.Dev), last.Ino})
	}
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return Holder{}, false // gone
	}
	for _, task := range tasks {
		tdir := dir + "/task/" + task.Name()
		for _, l := range []string{"cwd", "root"} {
			if in(tdir + "/" + l) {
				h.How = l + " (thread " + task.Name() + ")"
				return h, true
			}
		}
		fds, err := os.ReadDir(tdir + "/fd")
		if err != nil {
			if os.IsNotExist(err) {
				continue // the thread ended
			}
			// Not ours to see. A process that started after the tree's
			// command began could be one of its own (through sudo, say);
			// a kernel thread cannot.
			if kernelThread(dir) {
				return Holder{}, false
			}
			if started, ok := startTime(dir, boot, tick); !ok || started.After(since) {
				h.How = "cannot be inspected (" + err.Error() + ")"
				return h, true
			}
			return Holder{}, false
		}
		for _, fd := range fds {
			if in(tdir + "/fd/" + fd.Name()) {
				h.How = "fd " + fd.Name() + " (thread " + task.Name() + ")"
				return h, true
			}
			if how, ok := sc.special(tdir+"/fd/"+fd.Name(), tdir+"/fdinfo/"+fd.Name(), uint64(last.Dev), recent()); ok {
				h.How = how + " (fd " + fd.Name() + ", thread " + task.Name() + ")"
				return h, true
			}
		}
		if mappedFrom(tdir+"/maps", ids) {
			h.How = "mapped file (thread " + task.Name() + ")"
			return h, true
		}
	}
	return Holder{}, false
}

// fsPath is a directory as its file system sees it: the device, and the
// path from the file system's root, which is how mountinfo names the root
// of every mount made from it.
type fsPath struct {
	dev  uint64
	path string
}

// treeInFS finds dir's path within its file system from this process's
// mounts: the mount it lies on, and that mount's own root.
func treeInFS(dir string) (fsPath, error) {
	st, err := manifest.Lstat(dir)
	if err != nil {
		return fsPath{}, fmt.Errorf("pooled tree: %w", err)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fsPath{}, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	best, found := "", fsPath{}
	for line := range bytes.Lines(b) {
		dev, root, mp, ok := mountLine(string(line))
		if !ok || dev != st.Dev {
			continue
		}
		if mp != "/" && dir != mp && !strings.HasPrefix(dir, mp+"/") {
			continue
		}
		if len(mp) >= len(best) {
			best = mp
			found = fsPath{dev: dev, path: path.Join(root, strings.TrimPrefix(dir, mp))}
		}
	}
	if best == "" {
		return fsPath{}, fmt.Errorf("pooled tree %s: no mount of its file system in /proc/self/mountinfo", dir)
	}
	return found, nil
}

// mountedIn looks through the mounts of a process's mount namespace for
// one made from the tree or from anything in it.
func (sc *scan) mountedIn(pdir string, tree fsPath) (Holder, bool) {
	b, err := os.ReadFile(pdir + "/mountinfo")
	if err != nil {
		return Holder{}, false
	}
	for line := range bytes.Lines(b) {
		dev, root, mp, ok := mountLine(string(line))
		if ok && dev == tree.dev && (root == tree.path || strings.HasPrefix(root, tree.path+"/")) {
			return Holder{How: "mount of " + root + " at " + mp + " in its mount namespace"}, true
		}
		// A bind of a mount namespace's file keeps that namespace alive
		// with no process in it.
		if ok && strings.HasPrefix(root, "mnt:[") && !sc.liveNS[root] {
			return Holder{How: "a bind of mount namespace " + root + " at " + mp + ", which no process is in: its mounts cannot be inspected"}, true
		}
	}
	return Holder{}, false
}

// mountLine reads a mountinfo line: "id parent major:minor root mountpoint ...".
func mountLine(line string) (dev uint64, root, mountPoint string, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 5 {
		return 0, "", "", false
	}
	maj, min, found := strings.Cut(fields[2], ":")
	if !found {
		return 0, "", "", false
	}
	ma, err1 := strconv.ParseUint(maj, 10, 32)
	mi, err2 := strconv.ParseUint(min, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, "", "", false
	}
	return unix.Mkdev(uint32(ma), uint32(mi)), unescapeMount(fields[3]), unescapeMount(fields[4]), true
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

// kernelThread reports whether a process is a kernel thread (PF_KTHREAD in
// its flags), which no command can have started or handed a descriptor.
func kernelThread(dir string) bool {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	k := bytes.LastIndexByte(b, ')')
	if k < 0 {
		return false
	}
	// flags is field 9 of the line, the 7th after the name.
	fields := strings.Fields(string(b[k+1:]))
	if len(fields) < 7 {
		return false
	}
	flags, err := strconv.ParseUint(fields[6], 10, 64)
	return err == nil && flags&0x00200000 != 0
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

// Marked lists the processes whose environment holds marker (a
// "NAME=value" line): airlock puts AIRLOCK_TX=<id> in its command's
// environment, which every process the command starts inherits, daemons
// included, unless it replaces its environment on purpose.
func Marked(marker string) []Holder {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(marker)
	self := os.Getpid()
	var out []Holder
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + p.Name() + "/environ")
		if err != nil {
			continue
		}
		for v := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(v, want) {
				comm, _ := os.ReadFile("/proc/" + p.Name() + "/comm")
				out = append(out, Holder{PID: pid, Command: strings.TrimSpace(string(comm)), How: "left running by the command"})
				break
			}
		}
	}
	return out
}
