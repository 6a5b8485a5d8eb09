package torture

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// sysEvent is one completed system call of a strace log.
type sysEvent struct {
	i    int    // position in the log, in order of completion
	line string // as strace printed it
	name string
	args []string
	ret  string // the return value as printed, with any <path>
	ok   bool

	// Derived: the paths the call acted on, absolute.
	path string // the file or directory acted on (fd path, or dirfd + name)
	dst  string // renames: the destination
}

// traceLog is a parsed `strace -f -y` log.
type traceLog struct {
	events []sysEvent
	fds    map[int]string // last path each descriptor number was opened as
}

var (
	linePID   = regexp.MustCompile(`^(\d+) +(.*)$`)
	unfinRe   = regexp.MustCompile(`^(.*) <unfinished \.\.\.>$`)
	resumedRe = regexp.MustCompile(`^<\.\.\. (\w+) resumed>(.*)$`)
	callRe    = regexp.MustCompile(`^(\w+)\((.*)\) += (.*)$`)
	fdPathRe  = regexp.MustCompile(`^(?:AT_FDCWD|-?\d+|0x[0-9a-f]+)<(.*)>$`)
)

// parseTrace reads a strace log written with -f -y -s N -o FILE.
func parseTrace(t *testing.T, file string) *traceLog {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tl := &traceLog{fds: map[int]string{}}
	pending := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		m := linePID.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		pid, text := m[1], m[2]
		if u := unfinRe.FindStringSubmatch(text); u != nil {
			pending[pid] = u[1]
			continue
		}
		if r := resumedRe.FindStringSubmatch(text); r != nil {
			text = pending[pid] + r[2]
			delete(pending, pid)
		}
		c := callRe.FindStringSubmatch(text)
		if c == nil {
			continue // signals, exits
		}
		ev := sysEvent{i: len(tl.events), line: text, name: c[1], args: splitArgs(c[2]), ret: c[3]}
		ev.ok = !strings.HasPrefix(ev.ret, "-1") && !strings.HasPrefix(ev.ret, "?")
		tl.derive(&ev)
		tl.events = append(tl.events, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tl
}

// splitArgs splits a syscall's argument list at the top-level commas.
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[' || c == '(':
			depth++
		case c == '}' || c == ']' || c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// fdPath is the path strace -y printed for a descriptor argument.
func fdPath(arg string) string {
	if m := fdPathRe.FindStringSubmatch(arg); m != nil {
		return m[1]
	}
	return ""
}

// unquote decodes a strace string argument.
func unquote(arg string) string {
	arg = strings.TrimSuffix(arg, "...")
	if s, err := strconv.Unquote(arg); err == nil {
		return s
	}
	return strings.Trim(arg, `"`)
}

func join(dir, name string) string {
	if strings.HasPrefix(name, "/") || dir == "" {
		return path.Clean(name)
	}
	return path.Join(dir, name)
}

func (tl *traceLog) derive(ev *sysEvent) {
	a := ev.args
	arg := func(i int) string {
		if i < len(a) {
			return a[i]
		}
		return ""
	}
	switch ev.name {
	case "openat", "openat2":
		ev.path = join(fdPath(arg(0)), unquote(arg(1)))
		if p := fdPath(ev.ret); p != "" {
			ev.path = p
			if n, err := strconv.Atoi(ev.ret[:strings.IndexByte(ev.ret, '<')]); err == nil {
				tl.fds[n] = p
			}
		}
	case "rename":
		ev.path, ev.dst = path.Clean(unquote(arg(0))), path.Clean(unquote(arg(1)))
	case "renameat", "renameat2":
		ev.path, ev.dst = join(fdPath(arg(0)), unquote(arg(1))), join(fdPath(arg(2)), unquote(arg(3)))
	case "unlinkat", "mkdirat", "fchmodat":
		ev.path = join(fdPath(arg(0)), unquote(arg(1)))
	case "utimensat":
		ev.path = join(fdPath(arg(0)), unquote(arg(1)))
		if arg(1) == "NULL" { // futimens: the descriptor's own file
			ev.path = fdPath(arg(0))
		}
	case "symlinkat":
		ev.path = join(fdPath(arg(1)), unquote(arg(2)))
	case "write", "pwrite64", "fsync", "fdatasync", "syncfs", "fchmod", "copy_file_range", "sync_file_range":
		ev.path = fdPath(arg(0))
	case "syscall_0x1c4": // fchmodat2, which strace 6.1 does not decode: the directory only
		if n, err := strconv.ParseInt(strings.TrimPrefix(arg(0), "0x"), 16, 64); err == nil {
			ev.path = tl.fds[int(n)]
		}
		ev.name = "fchmodat2"
	}
}

// creates reports whether ev creates a regular file.
func (ev sysEvent) creates() bool {
	return (ev.name == "openat" || ev.name == "openat2") && ev.ok && strings.Contains(ev.line, "O_CREAT")
}

// mutates reports whether ev changes something at or under root, and the
// directories whose entries (or, for a chmod of a directory, whose own
// inode) it changed.
func (ev sysEvent) mutates(root string) (bool, []string) {
	if !ev.ok {
		return false, nil
	}
	in := func(p string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	switch ev.name {
	case "renameat", "renameat2", "rename":
		if in(ev.path) || in(ev.dst) {
			return true, []string{path.Dir(ev.path), path.Dir(ev.dst)}
		}
	case "unlinkat", "mkdirat", "symlinkat":
		if in(ev.path) {
			return true, []string{path.Dir(ev.path)}
		}
	case "openat", "openat2":
		if ev.creates() && in(ev.path) {
			return true, []string{path.Dir(ev.path)}
		}
	case "write", "pwrite64", "fchmod", "fchmodat", "utimensat", "copy_file_range":
		if in(ev.path) {
			return true, nil
		}
	case "fchmodat2":
		// The name is not decoded: the directory is known, the entry is
		// not. A directory's own mode change is checked by its fsync.
		if in(ev.path) {
			return true, nil
		}
	}
	return false, nil
}

// fsyncedAfter returns the index of the first fsync of p in (from, to),
// or of the first syncfs of the file system that holds p, or -1.
func (tl *traceLog) fsyncedAfter(p string, from, to int) int {
	for _, ev := range tl.events[max(from+1, 0):min(to, len(tl.events))] {
		if (ev.name == "fsync" || ev.name == "fdatasync") && ev.ok && ev.path == p {
			return ev.i
		}
		if ev.name == "syncfs" && ev.ok && sameFS(ev.path, p) {
			return ev.i
		}
	}
	return -1
}

// sameFS reports whether the paths a and b, or the nearest of their
// parents that still exist, lie on one file system.
func sameFS(a, b string) bool {
	da, oka := devOf(a)
	db, okb := devOf(b)
	return oka && okb && da == db
}

func devOf(p string) (uint64, bool) {
	for ; p != "/" && p != "." && p != ""; p = path.Dir(p) {
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			return uint64(st.Dev), true
		}
	}
	return 0, false
}

// firstWrite2 is the index of the first write to stderr that contains s.
func (tl *traceLog) firstWrite2(s string) int {
	for _, ev := range tl.events {
		if ev.name == "write" && len(ev.args) > 1 && strings.HasPrefix(ev.args[0], "2") && strings.Contains(ev.args[1], s) {
			return ev.i
		}
	}
	return -1
}

// checkRenamedSynced: no file created by the traced process is renamed
// into place before it was fsync'd through a descriptor, with no write,
// chmod or change of times after that fsync. A file is followed from name
// to name: a frozen object named by its digest, then moved into the base
// under the apply's temporary name (.airlock-*, where recover looks for
// it, not yet a name of the base), then renamed into place, must be
// durable with every change made to it on the way at each rename but the
// one to the temporary name. It returns how many renames it checked.
func (tl *traceLog) checkRenamedSynced(t *testing.T) int {
	t.Helper()
	since := map[string]int{} // a created file's current name: the call its changes are looked for from
	last := map[string]int{}  // its current name: its last change before since
	n := 0
	for _, ev := range tl.events {
		if ev.creates() {
			since[ev.path], last[ev.path] = ev.i, ev.i
		}
		if !strings.HasPrefix(ev.name, "rename") || !ev.ok {
			continue
		}
		c, ok := since[ev.path]
		if !ok {
			continue // a symlink, a directory, or a file the process did not create
		}
		lastWrite := last[ev.path]
		for _, w := range tl.events[c:ev.i] {
			// Its bytes, mode and times all reach the disk with the
			// fsync; a change after it is not durable.
			switch w.name {
			case "write", "pwrite64", "copy_file_range", "fchmod", "utimensat", "fchmodat":
			default:
				continue
			}
			if w.ok && w.path == ev.path {
				lastWrite = w.i
			}
		}
		if !strings.HasPrefix(path.Base(ev.dst), ".airlock-") {
			n++
			if tl.fsyncedAfter(ev.path, lastWrite, ev.i) < 0 {
				t.Errorf("%s was renamed to %s (call %d) without an fsync after its last change (call %d: %s)", ev.path, ev.dst, ev.i, lastWrite, tl.events[lastWrite].line)
			}
		}
		delete(since, ev.path)
		delete(last, ev.path)
		since[ev.dst], last[ev.dst] = ev.i, lastWrite
	}
	return n
}

// straceCmd is airlock under strace, the log written to out.
func straceCmd(w *world, out string, env []string, args ...string) testbin.Cmd {
	sargs := []string{"-f", "-qq", "-y", "-s", "256", "-o", out,
		// Every call but the runtime's noise: strace 6.1 cannot name
		// fchmodat2 in a -e trace= list, so the list is inverted.
		"-e", "trace=!futex,nanosleep,rt_sigaction,rt_sigprocmask,rt_sigreturn,mmap,munmap,madvise,sched_yield,getpid,gettid,tgkill,clock_gettime,epoll_pwait,epoll_ctl,epoll_create1,sigaltstack,clone,clone3,mprotect,getrandom,prlimit64,sched_getaffinity,arch_prctl,set_tid_address,set_robust_list,rseq,pipe2,eventfd2,getuid,geteuid,getgid,getegid,uname,brk,access,execve,close,fstat,newfstatat,lseek,read,pread64,getdents64,readlinkat,fcntl,flock,ioctl,wait4,waitid",
		bin}
	c := w.cmd(env, args...)
	c.Bin, c.Args = "strace", append(sargs, c.Args...)
	return c
}

func needStrace(t *testing.T) {
	t.Helper()
	testbin.Require(t, "strace", "apt-get install strace: the syscall-order proof records a commit's system calls with it")
	if out, err := exec.Command("strace", "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		testbin.Missing(t, "strace cannot trace here (%v: %s)", err, out)
	}
}

func eventsString(evs []sysEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %d %s\n", e.i, e.line)
	}
	return b.String()
}
