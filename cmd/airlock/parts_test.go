package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// partPrefix starts the first argument of a start of the test binary that
// plays a part for a test instead of running the tests. It is an
// argument, not an environment variable, so that it survives `env -i`.
const partPrefix = "-airlock-e2e-part="

// partCommand is the argv that starts the test binary playing part.
func partCommand(part string, args ...string) []string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return append([]string{exe, partPrefix + part}, args...)
}

// playPart plays a part and exits.
func playPart(part string, args []string) {
	switch part {
	case "inotify-writer":
		inotifyWriter(args)
	case "tiocsti":
		tiocsti(args)
	case "fd-giver":
		fdGiver(args)
	case "fd-holder":
		fdHolder(args)
	}
	fmt.Fprintf(os.Stderr, "unknown part %q\n", part)
	os.Exit(2)
}

// inotifyWriter TREE STATE ARMED GO [TAG] holds nothing of the tree at TREE but
// an inotify watch: it moves its working directory out, says it is armed
// (the file ARMED), and at the first opening of the tree's root (a walk
// reading it) once the file GO exists, writes leak.txt into every staged
// workspace under STATE and exits. It is the leftover that waits for a
// check to look and then writes where the check has already looked. TAG,
// unread, names it in its argument list.
func inotifyWriter(args []string) {
	if len(args) != 4 && len(args) != 5 {
		os.Exit(2)
	}
	tree, state, armed, goFile := args[0], args[1], args[2], args[3]
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		os.Exit(3)
	}
	if _, err := unix.InotifyAddWatch(fd, tree, unix.IN_OPEN|unix.IN_ONLYDIR); err != nil {
		os.Exit(4)
	}
	if err := os.Chdir("/"); err != nil {
		os.Exit(5)
	}
	if err := os.WriteFile(armed, nil, 0o644); err != nil {
		os.Exit(6)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := unix.Read(fd, buf); err != nil {
			os.Exit(7)
		}
		if _, err := os.Stat(goFile); err == nil {
			break
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(state, "tx", "*", "staged"))
	for _, d := range dirs {
		os.WriteFile(filepath.Join(d, "leak.txt"), []byte("leak\n"), 0o644)
	}
	os.Exit(0)
}

// tiocsti 0|tty OUT tries to type a command into its terminal (stdin, or
// /dev/tty opened) with ioctl(TIOCSTI), for a shell to run once airlock
// returns; asks that terminal for its window size (an ioctl nothing may
// refuse); writes what each got to OUT ("-": stdout), as
// "tiocsti=RESULT\nwinsz=RESULT\n"; and changes the file "changed", so
// that the run has something to commit (and validate).
func tiocsti(args []string) {
	if len(args) != 2 {
		os.Exit(2)
	}
	f := os.Stdin
	if args[0] == "tty" {
		var err error
		if f, err = os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
	fd := f.Fd()
	sti := "ok"
	for _, c := range []byte("touch INJECTED\n") {
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, fd, unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
			sti = e.Error()
			break
		}
	}
	winsz := "ok"
	if _, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ); err != nil {
		winsz = err.Error()
	}
	report := []byte("tiocsti=" + sti + "\nwinsz=" + winsz + "\n")
	out := os.Stdout
	if args[1] != "-" {
		var err error
		if out, err = os.Create(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
	}
	if _, err := out.Write(report); err != nil {
		os.Exit(5)
	}
	if err := os.WriteFile("changed", []byte("x\n"), 0o644); err != nil {
		os.Exit(6)
	}
	os.Exit(0)
}

// fdGiver SOCK connects to the abstract unix socket SOCK and hands a
// descriptor of its working directory (its staged workspace, as the
// command sees it: no state path named) to whoever listens there, then
// exits once it is told the descriptor arrived.
func fdGiver(args []string) {
	if len(args) != 1 {
		os.Exit(2)
	}
	dir, err := unix.Open(".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Exit(3)
	}
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		os.Exit(4)
	}
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: "@" + args[0]}); err != nil {
		os.Exit(5)
	}
	if err := unix.Sendmsg(s, []byte("d"), unix.UnixRights(dir), nil, 0); err != nil {
		os.Exit(6)
	}
	if _, _, err := unix.Recvfrom(s, make([]byte, 1), 0); err != nil {
		os.Exit(7)
	}
	os.Exit(0)
}

// fdHolder SOCK READY GO STOP [TAG] is a command of a transaction that
// keeps running while others settle: it listens on the abstract unix
// socket SOCK, says so (the file READY), takes the one directory
// descriptor a command of another transaction hands it (fdGiver), and
// holds it. Once the file GO exists, at the first time a walk has read
// that directory (it is closed after a read), it writes leak.txt through
// the descriptor and exits; it exits without writing once STOP exists.
// TAG, unread, names it in its argument list.
func fdHolder(args []string) {
	if len(args) != 4 && len(args) != 5 {
		os.Exit(2)
	}
	sock, ready, goFile, stop := args[0], args[1], args[2], args[3]
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		os.Exit(3)
	}
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: "@" + sock}); err != nil {
		os.Exit(4)
	}
	if err := unix.Listen(l, 1); err != nil {
		os.Exit(5)
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		os.Exit(6)
	}
	c, _, err := unix.Accept(l)
	if err != nil {
		os.Exit(7)
	}
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(c, make([]byte, 1), oob, 0)
	if err != nil {
		os.Exit(8)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		os.Exit(9)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		os.Exit(10)
	}
	unix.Write(c, []byte("k"))
	unix.Close(c)
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		os.Exit(11)
	}
	if _, err := unix.InotifyAddWatch(in, fmt.Sprintf("/proc/self/fd/%d", fds[0]), unix.IN_CLOSE_NOWRITE|unix.IN_ONLYDIR); err != nil {
		os.Exit(12)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := os.Stat(stop); err == nil {
			os.Exit(0)
		}
		pfd := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}}
		if n, _ := unix.Poll(pfd, 20); n <= 0 {
			continue
		}
		if _, err := unix.Read(in, buf); err != nil {
			continue
		}
		if _, err := os.Stat(goFile); err != nil {
			continue
		}
		w, err := unix.Openat(fds[0], "leak.txt", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Write(w, []byte("written by another transaction's process\n"))
			unix.Close(w)
		}
		os.Exit(0)
	}
}
