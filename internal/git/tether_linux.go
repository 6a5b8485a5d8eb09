package git

import (
	"os/exec"
	"runtime"
	"syscall"
)

// groupOf puts cmd in a session of its own, whose process group its
// context's end kills whole, and has the kernel send it SIGTERM when
// airlock ends (the shell of tetherScript then kills its group). A new
// session has no controlling terminal: git, a credential helper or ssh
// that would ask on /dev/tty cannot open it (ENXIO) and fails instead of
// waiting for an answer no one gives. setsid makes the group too (a
// session leader may not setpgid).
func groupOf(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error {
		// The group's id is its leader's pid: the shell, git, and what
		// git started.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// runPinned runs cmd; a tethered one from a goroutine locked to its OS
// thread until it ends. The parent-death signal fires when the thread
// that started the child ends, not the process: Go may retire a thread
// an unlocked goroutine ran on, which would kill a git that is still
// working. A locked thread lives while the goroutine keeps it.
func runPinned(cmd *exec.Cmd, pinned bool) error {
	if pinned {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	return cmd.Run()
}
