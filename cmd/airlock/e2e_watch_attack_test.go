//go:build linux

package main_test

// Attacks on the watch of a run (watch.go, internal/watch,
// manifest.Patch): each test is a write the watch may not name, or a
// change set it may read wrong, checked against what the same script
// makes of a plain copy (the oracle) and against a run with the watch
// off (AIRLOCK_NO_WATCH=1), which walks.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	statepkg "github.com/airlockdev/airlock/internal/state"
	"github.com/airlockdev/airlock/internal/testbin"
)

// attackPrefix starts the first argument of a start of the test binary
// that plays one of the watch attacks' parts (see init) instead of the
// tests.
const attackPrefix = "-airlock-watch-attack="

func init() {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], attackPrefix) {
		var err error
		switch part, args := strings.TrimPrefix(os.Args[1], attackPrefix), os.Args[2:]; {
		case part == "uring-link" && len(args) == 2:
			err = uringLinkat(args[0], args[1])
		case part == "mmap-give" && len(args) == 3:
			err = mmapGive(args[0], args[1], args[2])
		case part == "fanotify-write" && len(args) == 2:
			err = fanotifyWrite(args[0], args[1])
		case part == "setattr" && len(args) == 1:
			err = fileSetattrNodump(args[0])
		case part == "give-fd" && len(args) == 2:
			err = giveFD(args[0], args[1])
		default:
			err = fmt.Errorf("unknown part %q %q", part, args)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "attack part:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// attackCommand is a shell word list that starts the test binary playing
// part.
func attackCommand(t *testing.T, part string, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	words := append([]string{exe, attackPrefix + part}, args...)
	for i, w := range words {
		words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  [10]uint32 // head, tail, ring_mask, ring_entries, flags, dropped, array, resv1, user_addr
	cqOff                                                                  [10]uint32 // head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1, user_addr
}

// uringLinkat makes newpath a second name of oldpath with IORING_OP_LINKAT:
// the link is made by io_uring, not by a link(2) or linkat(2) system call,
// so no seccomp filter sees it.
func uringLinkat(oldpath, newpath string) error {
	var p uringParams
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return fmt.Errorf("io_uring_setup: %w", e)
	}
	defer unix.Close(int(fd))
	sqTail, sqMask, sqArray := p.sqOff[1], p.sqOff[2], p.sqOff[6]
	cqHead, cqTail, cqMask, cqes := p.cqOff[0], p.cqOff[1], p.cqOff[2], p.cqOff[5]
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	sq, err := unix.Mmap(int(fd), 0, int(sqArray+p.sqEntries*4), prot, flags)
	if err != nil {
		return fmt.Errorf("mmap the submission ring: %w", err)
	}
	cq, err := unix.Mmap(int(fd), 0x8000000, int(cqes+p.cqEntries*16), prot, flags)
	if err != nil {
		return fmt.Errorf("mmap the completion ring: %w", err)
	}
	sqes, err := unix.Mmap(int(fd), 0x10000000, int(p.sqEntries*64), prot, flags)
	if err != nil {
		return fmt.Errorf("mmap the submission entries: %w", err)
	}
	u32 := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	oldp, err := unix.BytePtrFromString(oldpath)
	if err != nil {
		return err
	}
	newp, err := unix.BytePtrFromString(newpath)
	if err != nil {
		return err
	}
	tail := *u32(sq, sqTail)
	idx := tail & *u32(sq, sqMask)
	sqe := sqes[idx*64 : idx*64+64]
	clear(sqe)
	const opLinkat = 39 // IORING_OP_LINKAT
	sqe[0] = opLinkat
	cwd := int32(unix.AT_FDCWD)
	*(*int32)(unsafe.Pointer(&sqe[4])) = cwd                                     // fd: the old path's directory
	*(*uint64)(unsafe.Pointer(&sqe[8])) = uint64(uintptr(unsafe.Pointer(newp)))  // addr2: the new path
	*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(oldp))) // addr: the old path
	*(*uint32)(unsafe.Pointer(&sqe[24])) = uint32(cwd)                           // len: the new path's directory
	*u32(sq, sqArray+idx*4) = idx
	*u32(sq, sqTail) = tail + 1
	const enterGetEvents = 1
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, fd, 1, 1, enterGetEvents, 0, 0); e != 0 {
		return fmt.Errorf("io_uring_enter: %w", e)
	}
	head := *u32(cq, cqHead)
	if head == *u32(cq, cqTail) {
		return fmt.Errorf("io_uring: no completion")
	}
	res := *(*int32)(unsafe.Pointer(&cq[cqes+(head&*u32(cq, cqMask))*16+8]))
	*u32(cq, cqHead) = head + 1
	if res < 0 {
		return fmt.Errorf("linkat through io_uring %s %s: %w", oldpath, newpath, unix.Errno(-res))
	}
	return nil
}

// fanotifyWrite overwrites the first bytes of path with content through
// the descriptor a fanotify event carries: the kernel opens it
// FMODE_NONOTIFY, so that the listener's own writes make no events, and
// inotify sees none of them either. It needs CAP_SYS_ADMIN (root).
func fanotifyWrite(path, content string) error {
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC, unix.O_RDWR|unix.O_LARGEFILE)
	if err != nil {
		return fmt.Errorf("fanotify_init: %w", err)
	}
	if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD, unix.FAN_OPEN, unix.AT_FDCWD, path); err != nil {
		return fmt.Errorf("fanotify_mark %s: %w", path, err)
	}
	f, err := os.Open(path) // the event the mark hands a descriptor with
	if err != nil {
		return err
	}
	f.Close()
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return fmt.Errorf("read the fanotify event: %w", err)
	}
	if n < int(unsafe.Sizeof(unix.FanotifyEventMetadata{})) {
		return fmt.Errorf("a short fanotify event")
	}
	ev := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[0]))
	if ev.Fd < 0 {
		return fmt.Errorf("a fanotify event without a descriptor")
	}
	// A write in place, no truncation: a truncation is a change of the
	// path (notify_change), which inotify does report.
	if _, err := unix.Pwrite(int(ev.Fd), []byte(content), 0); err != nil {
		return fmt.Errorf("write %s through the fanotify descriptor: %w", path, err)
	}
	return nil
}

// mmapGive maps path shared, hands a descriptor of it to whoever listens
// on the abstract unix socket sock (and waits for the word it arrived),
// then writes content over the file's first bytes through the mapping
// and unmaps it. An mmap write makes no IN_MODIFY: its only event is the
// IN_CLOSE_WRITE of the file's last close, which here comes when the
// listener closes its descriptor.
func mmapGive(path, sock, content string) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	m, err := unix.Mmap(fd, 0, len(content), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap %s: %w", path, err)
	}
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: "@" + sock}); err != nil {
		return fmt.Errorf("connect @%s: %w", sock, err)
	}
	if err := unix.Sendmsg(s, []byte("f"), unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("send the descriptor: %w", err)
	}
	if _, _, err := unix.Recvfrom(s, make([]byte, 1), 0); err != nil {
		return fmt.Errorf("wait for the holder: %w", err)
	}
	unix.Close(fd)
	copy(m, content)
	return unix.Munmap(m)
}

// holdFDs listens on a fresh abstract unix socket, takes one descriptor
// from the one process that connects, answers, and keeps the descriptor
// open until the test ends. It returns the socket's name.
func holdFDs(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("airlock-watch-attack-%d-%s", os.Getpid(), filepath.Base(testbin.RealDir(t)))
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(l, 1); err != nil {
		t.Fatal(err)
	}
	held := make(chan int, 1)
	t.Cleanup(func() {
		unix.Close(l) // ends an Accept still waiting
		select {
		case fd := <-held:
			unix.Close(fd)
		default:
		}
	})
	go func() {
		c, _, err := unix.Accept(l)
		if err != nil {
			return
		}
		defer unix.Close(c)
		oob := make([]byte, unix.CmsgSpace(4))
		_, oobn, _, _, err := unix.Recvmsg(c, make([]byte, 1), oob, 0)
		if err != nil {
			return
		}
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
			if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
				held <- fds[0]
			}
		}
		unix.Write(c, []byte("k"))
	}()
	return name
}

// recycledRun runs a first, committing run and waits until the tree it
// pooled is past the file system's timestamp window, so that the next
// run recycles a tree whose untouched files its open measurement proves
// by stat alone (as a long-lived pool's are): nothing there hashes a file
// the watch did not name. It returns that first run's id.
func (x *h) recycledRun(poolPaths ...string) string {
	x.t.Helper()
	r, j := x.runJSON(nil, "echo warm > warm.txt")
	wantCode(x.t, r, 0)
	needWatch(x.t, j)
	if j.Outcome != "committed" {
		x.t.Fatalf("first run: %+v, want committed", j)
	}
	var paths []string
	for _, rel := range poolPaths {
		m, _ := filepath.Glob(filepath.Join(x.state, "bases", "*", "pool", "*", "tree", filepath.FromSlash(rel)))
		paths = append(paths, m...)
	}
	if len(paths) != len(poolPaths) {
		x.t.Fatalf("the first run's pooled tree holds %d of %q", len(paths), poolPaths)
	}
	st, err := statepkg.Open(x.state)
	if err != nil {
		x.t.Fatal(err)
	}
	testbin.PastWindow(x.t, x.state, st.Clock().WindowNs(), paths...)
	return r.Settle["tx"]
}

// watchedVsOracle runs script (watched, or walked with walk) and checks
// the run commits what it makes of a plain copy; id1, when set, is the
// run whose tree it must recycle.
func (x *h) watchedVsOracle(walk bool, script, id1 string) {
	x.t.Helper()
	want := x.oracle(script)
	var env []string
	if walk {
		env = []string{"AIRLOCK_NO_WATCH=1"}
	}
	r, j := x.runJSON(env, script)
	if walk && j.Measured != "walk" {
		x.t.Fatalf("with AIRLOCK_NO_WATCH=1: measured %q", j.Measured)
	}
	if !walk {
		needWatch(x.t, j)
	}
	if id1 != "" {
		if s := x.showRecycle(r.Settle["tx"]); s.Recycled == nil || s.Recycled.From != id1 {
			x.t.Logf("the run did not recycle %s (recycled %+v, not_recycled %q)", id1, s.Recycled, s.NotRecycled)
		}
	}
	got := snapshot(x.t, x.base, nil)
	if d := treeDiff(want, got); len(d) > 0 || r.Code != 0 {
		x.t.Errorf("watched run (measured %q, unwatched %q): exit %d, outcome %q +%d ~%d -%d; base vs oracle:\n  %s\nstderr: %s",
			j.Measured, j.Unwatched, r.Code, j.Outcome, j.Added, j.Modified, j.Deleted, strings.Join(d, "\n  "), r.Stderr)
	}
}

// watchedRefuses runs script watched and checks that the guard of a
// watched run refused what it tried (stderr says refusal), so that the
// run failed and the base is as it was.
func (x *h) watchedRefuses(script, refusal string) {
	x.t.Helper()
	before := snapshot(x.t, x.base, nil)
	r, j := x.runJSON(nil, script)
	needWatch(x.t, j)
	if r.Code == 0 || !strings.Contains(r.Stderr, refusal) {
		x.t.Fatalf("watched run of %q: exit %d, stderr %q; want it refused with %q", script, r.Code, r.Stderr, refusal)
	}
	wantTree(x.t, "base after the refused attack", before, snapshot(x.t, x.base, nil))
}

// attackCases run an attack on a fresh tree and on a recycled one, each
// watched and, as the control that must pass, walked.
var attackCases = []struct {
	name           string
	recycled, walk bool
}{
	{"fresh/watched", false, false}, {"recycled/watched", true, false},
	{"fresh/walked", false, true}, {"recycled/walked", true, true},
}

// TestE2EWatchAttackRenameBesideASibling: `mv d d.old` (any new name
// that sorts between "d" and "d/…": '.', '-', ' ' and the like sort
// before '/') leaves the entries of d in the patched manifest, since
// manifest.Patch's test of whether a kept entry lies in a measured
// subtree looks only at the subtree sorting just before it ("d.old"),
// not at "d". A fresh tree's run is refused (StagedChanged: it hashes
// d/f, which is gone); a recycled tree's run commits d.old and keeps d/f
// in the base, a tree no walk would give.
func TestE2EWatchAttackRenameBesideASibling(t *testing.T) {
	for _, c := range attackCases {
		t.Run(c.name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"d/f": F(0o644, "f\n"), "d/sub/g": F(0o644, "g\n"), "top": F(0o644, "top\n")})
			id1 := ""
			if c.recycled {
				id1 = x.recycledRun("d/f", "d/sub/g")
			}
			x.watchedVsOracle(c.walk, "mv d d.old", id1)
		})
	}
}

// TestE2EWatchAttackIOURingLink: the seccomp filter refuses link(2) and
// linkat(2), but io_uring's IORING_OP_LINKAT makes the same link without
// either system call. A write through the second name is reported under
// that name only; removing it afterwards leaves the file with one name,
// so manifest.Patch never sees a second one, and the change to a is
// lost: a fresh tree's run is refused (StagedChanged), a recycled tree's
// run settles no_changes with a's new bytes dropped. A walk commits it.
func TestE2EWatchAttackIOURingLink(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/io_uring_disabled"); err == nil {
		if b, _ := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); strings.TrimSpace(string(b)) == "2" {
			t.Skip("io_uring is disabled on this machine")
		}
	}
	for _, c := range attackCases {
		t.Run(c.name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a": F(0o644, "orig\n")})
			id1 := ""
			if c.recycled {
				id1 = x.recycledRun("a")
			}
			script := attackCommand(t, "uring-link", "a", "b") + " && echo evil > b && rm b"
			if !c.walk {
				// The guard: a watched command has no io_uring.
				x.watchedRefuses(script, "io_uring_setup: function not implemented")
				return
			}
			x.watchedVsOracle(c.walk, script, id1)
		})
	}
}

// TestE2EWatchAttackFanotifyWrite: as root, the command can listen with
// fanotify and write through the descriptor an event carries, which the
// kernel marks FMODE_NONOTIFY: no inotify event names the write, and the
// change is dropped (a recycled tree's run settles no_changes). A walk
// commits it.
func TestE2EWatchAttackFanotifyWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("fanotify with event descriptors needs CAP_SYS_ADMIN")
	}
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a": F(0o644, "orig\n")})
			id1 := x.recycledRun("a")
			if !walk {
				// The guard: a watched command cannot make a fanotify group.
				x.watchedRefuses(attackCommand(t, "fanotify-write", "a", "EVIL\n"), "fanotify_init: operation not permitted")
				return
			}
			x.watchedVsOracle(walk, attackCommand(t, "fanotify-write", "a", "EVIL\n"), id1)
		})
	}
}

// TestE2EWatchAttackLoopDevice: as root, the command can attach a staged
// file to a loop device and write through the device: the loop driver
// writes the file from the kernel (its write_iter, not write(2)), which
// makes no inotify event, and the device keeps the file open past the
// command, so no IN_CLOSE_WRITE names it either. The change is dropped
// (no_changes). A walk commits it.
func TestE2EWatchAttackLoopDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a loop device needs root")
	}
	testbin.Require(t, "losetup", "to attach a staged file to a loop device")
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a": F(0o644, strings.Repeat("o", 4096))})
			id1 := x.recycledRun("a")
			devFile := filepath.Join(testbin.RealDir(t), "dev")
			t.Cleanup(func() {
				if b, err := os.ReadFile(devFile); err == nil {
					exec.Command("losetup", "-d", strings.TrimSpace(string(b))).Run()
				}
			})
			script := fmt.Sprintf("set -e; dev=$(losetup -f --show a); echo $dev > %s; printf EVIL | dd of=$dev conv=notrunc,fsync status=none", devFile)
			if !walk {
				// The guard: a watched command cannot attach a file to a
				// loop device.
				x.watchedRefuses(script, "losetup")
				return
			}
			r, j := x.runJSON([]string{"AIRLOCK_NO_WATCH=1"}, script)
			if s := x.showRecycle(r.Settle["tx"]); s.Recycled == nil || s.Recycled.From != id1 {
				t.Logf("the run did not recycle %s (recycled %+v, not_recycled %q)", id1, s.Recycled, s.NotRecycled)
			}
			want := "EVIL" + strings.Repeat("o", 4092)
			if got := snapshot(t, x.base, nil)["a"].Content; got != want || r.Code != 0 {
				t.Errorf("a run that wrote a through a loop device: exit %d, outcome %q (measured %q), base a starts %q, want the write committed", r.Code, j.Outcome, j.Measured, got[:8])
			}
		})
	}
}

// TestE2EWatchAttackDeferredClose: the watch is read "once every process
// that could write the tree has ended: the kernel queues an event as the
// system call makes its change". An mmap write has no event of its own;
// its IN_CLOSE_WRITE comes with the file's last close, which need not be
// a process of the command's: here another process holds a descriptor
// the command handed it, and the command writes through its mapping and
// exits. The change is dropped (no_changes). A walk commits it. The same
// happens, as a race, with no other process at all: the command's last
// reference to the file in flight in a unix socket that is itself in
// flight (an SCM_RIGHTS cycle), which the kernel's unix garbage collector
// closes from a worker after the command has ended (about half of tries
// here drop the change).
func TestE2EWatchAttackDeferredClose(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a": F(0o644, "orig\n")})
			id1 := x.recycledRun("a")
			sock := holdFDs(t)
			var env []string
			if walk {
				env = []string{"AIRLOCK_NO_WATCH=1"}
			}
			r, j := x.runJSON(env, attackCommand(t, "mmap-give", "a", sock, "EVIL\n"))
			if s := x.showRecycle(r.Settle["tx"]); s.Recycled == nil || s.Recycled.From != id1 {
				t.Logf("the run did not recycle %s (recycled %+v, not_recycled %q)", id1, s.Recycled, s.NotRecycled)
			}
			if got := snapshot(t, x.base, nil)["a"].Content; got != "EVIL\n" || r.Code != 0 {
				t.Errorf("a run that wrote a through a mapping whose last close came after it: exit %d, outcome %q (measured %q), base a %q, want the write committed\n%s", r.Code, j.Outcome, j.Measured, got, r.Stderr)
			}
		})
	}
}
