package launch

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ctlFD is where an init finds the read end of the control pipe
// (ExtraFiles[1]): each byte airlock writes there is a signal to pass on
// to the command; its end means airlock is gone.
const ctlFD = 4

// leftoverGrace is how long the processes a command left running get
// between SIGTERM and the end of their namespace (SIGKILL).
var leftoverGrace = 2 * time.Second

// initMain is the helper as the init of the command's PID namespace. It
// starts the command, passes on the signals airlock forwards, reaps what
// the namespace orphans, and once the command has exited reports how,
// names what it left running, ends those (SIGTERM, then the end of the
// namespace), and exits. Every process the command started is in this
// namespace, however it detached: when this process exits the kernel
// kills whatever is left, and airlock's wait for it returns only once all
// of them are gone. It never returns.
func initMain(prog string, errno syscall.Errno, argv, env []string, caught <-chan (<-chan os.Signal)) {
	if errno != 0 {
		helperWrite(msgExec + "\x00" + strconv.Itoa(int(errno)) + "\x00" + errno.Error())
		os.Exit(127)
	}
	// Caught before the command starts: from then on it can signal its
	// init.
	sigs := <-caught
	// With no terminal, the helper leads a process group of its own (see
	// forwarder.group); the command then leads one inside the namespace,
	// and a forwarded signal reaches all of it.
	group := unix.Getpgrp() == 1
	pid, err := syscall.ForkExec(prog, argv, &syscall.ProcAttr{
		Env: env, Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Setpgid: group},
	})
	if err != nil {
		errno := toErrno(err)
		helperWrite(msgExec + "\x00" + strconv.Itoa(int(errno)) + "\x00" + errno.Error())
		os.Exit(127)
	}
	helperWrite(msgStarted + "\n")

	exited, empty := reap(pid)
	go passSignals(pid, group)
	var ws syscall.WaitStatus
	for waiting := true; waiting; {
		select {
		case ws = <-exited:
			waiting = false
		case <-sigs:
		}
	}
	left := leftovers()
	var rep strings.Builder
	rep.WriteString("exit " + strconv.Itoa(int(ws)) + "\n")
	for _, l := range left {
		rep.WriteString(l + "\n")
	}
	helperWrite(rep.String())
	if len(left) == 0 {
		select {
		case <-empty:
			os.Exit(0)
		default:
		}
	}
	endLeftovers(sigs, empty)
}

// catchSignals catches every signal it can, to drop them: an init gets no
// signal it has no handler for, but the Go runtime handles every one, and
// would exit on SIGINT or SIGTERM. Airlock forwards what the command
// should get through the control pipe (passSignals). One that airlock was
// started with ignored stays ignored, here and in the command. Catching
// each is a round trip to the runtime's signal thread, about a
// millisecond for all of them: the helper does it beside its mounts.
func catchSignals() <-chan os.Signal {
	sigs := make(chan os.Signal, 32)
	for s := syscall.Signal(1); s < 32; s++ {
		if s != syscall.SIGKILL && s != syscall.SIGSTOP && !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	return sigs
}

// reap waits for every process the namespace orphans: exited gets the
// command's status, and empty is closed once no child is left. Every
// process of the namespace descends from this one: once it has no child
// left, the namespace holds nobody else.
func reap(pid int) (exited <-chan syscall.WaitStatus, empty <-chan struct{}) {
	ex := make(chan syscall.WaitStatus, 1)
	em := make(chan struct{})
	go func() {
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				close(em)
				return
			}
			if wpid == pid {
				ex <- ws
			}
		}
	}()
	return ex, em
}

// passSignals passes each signal airlock forwards through the control
// pipe to the command (its process group, when it leads one); when the
// pipe ends, airlock is gone, and so is everything it ran.
func passSignals(pid int, group bool) {
	ctl := os.NewFile(ctlFD, "control")
	b := make([]byte, 1)
	for {
		if _, err := ctl.Read(b); err != nil {
			unix.Kill(-1, unix.SIGKILL)
			os.Exit(0)
		}
		target := pid
		if group {
			target = -pid
		}
		unix.Kill(target, syscall.Signal(b[0]))
	}
}

// endLeftovers ends what the command left running: SIGTERM, then, after
// leftoverGrace, the end of the namespace with this process's exit. It
// never returns.
func endLeftovers(sigs <-chan os.Signal, empty <-chan struct{}) {
	// A stopped process gets SIGTERM only once continued.
	unix.Kill(-1, unix.SIGTERM)
	unix.Kill(-1, unix.SIGCONT)
	grace := time.NewTimer(leftoverGrace)
	for {
		select {
		case <-empty:
			os.Exit(0)
		case <-grace.C:
			os.Exit(0)
		case <-sigs:
		}
	}
}

// leftovers names the processes of this namespace other than its init,
// as "PID (comm)".
func leftovers() []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == 1 {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, e.Name()+" ("+printable(strings.TrimSuffix(string(comm), "\n"))+")")
	}
	return out
}

// printable keeps a process name on one line.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// initEnd is what an init reported once the command had exited.
type initEnd struct {
	state syscall.WaitStatus
	left  []string
}

// readInitEnd reads an init's report after msgStarted, up to the end of
// the pipe: the pipe ends when the init has exited, and with it every
// process of its namespace.
func readInitEnd(br *bufio.Reader) (initEnd, error) {
	var end initEnd
	line, err := br.ReadString('\n')
	ws, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "exit ")
	if err != nil || !ok {
		if err == nil || err == io.EOF {
			err = errors.New("the init of its PID namespace ended without reporting it")
		}
		_, _ = io.Copy(io.Discard, br)
		return end, err
	}
	n, err := strconv.Atoi(ws)
	if err != nil {
		_, _ = io.Copy(io.Discard, br)
		return end, errors.New("the init of its PID namespace reported a malformed exit")
	}
	end.state = syscall.WaitStatus(n)
	for {
		line, err := br.ReadString('\n')
		if line = strings.TrimSuffix(line, "\n"); line != "" {
			end.left = append(end.left, line)
		}
		if err != nil {
			return end, nil
		}
	}
}
