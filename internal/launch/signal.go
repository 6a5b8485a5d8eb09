package launch

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwarder catches SIGINT and SIGTERM for the life of one Run, so that
// airlock survives them and settles, and passes them to the command.
type forwarder struct {
	ch   chan os.Signal
	done chan struct{}
	wg   sync.WaitGroup
	// tty is the controlling terminal, nil without one.
	tty *os.File
	// group says the command is started as the leader of a process group
	// of its own, and signals go to that whole group (see ownGroup).
	group bool

	mu      sync.Mutex
	proc    *target
	pending []os.Signal // caught while no command was running
	skipped bool        // a terminal SIGINT was left to the terminal
	caught  syscall.Signal
}

// startForwarding starts catching; group gives the command a process
// group of its own even under a terminal (Spec.EndGroup).
func startForwarding(group bool) *forwarder {
	f := &forwarder{ch: make(chan os.Signal, 8), done: make(chan struct{})}
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		// A signal airlock was started with ignored (a background job of a
		// non-interactive shell ignores SIGINT) stays ignored, for airlock
		// and for the command; catching it would reset it to default in
		// the child.
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	signal.Notify(f.ch, sigs...)
	if tty, err := os.OpenFile("/dev/tty", os.O_RDONLY|syscall.O_NOCTTY, 0); err == nil {
		f.tty = tty
	}
	f.group = f.tty == nil || group
	f.wg.Add(1)
	go f.loop()
	return f
}

func (f *forwarder) loop() {
	defer f.wg.Done()
	for {
		select {
		case s := <-f.ch:
			f.deliver(s)
		case <-f.done:
			return
		}
	}
}

func (f *forwarder) deliver(s os.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Noted before the command can hear of it, so that its end cannot be
	// observed without this.
	f.note(s)
	if f.proc == nil {
		f.pending = append(f.pending, s)
		return
	}
	f.send(s)
}

// send must be called with f.mu held.
func (f *forwarder) send(s os.Signal) {
	if f.deliveredByTerminal(s) {
		return
	}
	// An error means the command has just exited; there is nobody left to
	// tell.
	_ = f.proc.send(s.(syscall.Signal))
}

// target is where forwarded signals go: the command itself, or the init
// of the PID namespace that holds it, which passes them on.
type target struct {
	// pid is the process airlock started, in airlock's own PID namespace.
	pid  int
	send func(syscall.Signal) error
}

// processTarget sends signals to p, and to its group when it leads one.
func processTarget(p *os.Process, group bool) *target {
	return &target{pid: p.Pid, send: func(s syscall.Signal) error { return signalCommand(p, group, s) }}
}

// signalCommand sends s to the command p, and to its whole process group
// when it leads one: a shell's children (`sleep 30 & wait`, a build's
// compilers) then stop at once too, instead of holding the run open until
// they finish on their own.
//
// The command gets a group of its own only where there is no controlling
// terminal, so no job control to disturb. Under a terminal it stays in
// airlock's group: the terminal sends Ctrl-C and Ctrl-Z to that whole
// group already, and a shell that brings airlock to the foreground (fg)
// brings the command with it. The price of a group of its own is that a
// signal sent to airlock's group does not reach the command directly; for
// SIGINT and SIGTERM airlock forwards it, SIGKILL it cannot see.
func signalCommand(p *os.Process, group bool, s os.Signal) error {
	if !group {
		return p.Signal(s)
	}
	return unix.Kill(-p.Pid, s.(syscall.Signal))
}

// deliveredByTerminal reports whether s is a SIGINT the command has
// already received without our help. Ctrl-C makes the terminal signal its
// whole foreground process group, which holds the command as well as
// airlock; forwarding it too would deliver it twice, and programs treat a
// second Ctrl-C as "stop cleaning up and quit". Go cannot see who sent a
// signal, so this is inferred: airlock's group is the terminal's
// foreground group and the command is still in it. The inference is wrong
// for a `kill -INT` aimed at airlock alone while it is in the foreground,
// so only the first such SIGINT is left to the terminal; later ones are
// forwarded.
func (f *forwarder) deliveredByTerminal(s os.Signal) bool {
	if s != syscall.SIGINT || f.tty == nil || f.skipped {
		return false
	}
	fg, err := unix.IoctlGetInt(int(f.tty.Fd()), unix.TIOCGPGRP)
	if err != nil {
		return false
	}
	own := unix.Getpgrp()
	if fg != own {
		return false
	}
	if pg, err := unix.Getpgid(f.proc.pid); err != nil || pg != own {
		return false
	}
	f.skipped = true
	return true
}

// attach makes p the target of forwarded signals, delivering any caught
// while no process was attached.
func (f *forwarder) attach(p *target) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.proc = p
	for _, s := range f.pending {
		f.send(s)
	}
	f.pending = nil
}

func (f *forwarder) detach() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.proc = nil
}

// note records s if it is the first signal caught; f.mu must be held.
func (f *forwarder) note(s os.Signal) {
	if sig, ok := s.(syscall.Signal); ok && f.caught == 0 {
		f.caught = sig
	}
}

// interrupted is the first signal caught, 0 when none.
func (f *forwarder) interrupted() syscall.Signal {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.caught
}

// stop restores the signals' default behaviour; signals caught after the
// command ended are not forwarded, since airlock is settling, but they
// are noted: once signal.Stop returns, every signal whose delivery began
// before it is in f.ch.
func (f *forwarder) stop() {
	signal.Stop(f.ch)
	close(f.done)
	f.wg.Wait()
	for drained := false; !drained; {
		select {
		case s := <-f.ch:
			f.mu.Lock()
			f.note(s)
			f.mu.Unlock()
		default:
			drained = true
		}
	}
	if f.tty != nil {
		f.tty.Close()
	}
}
