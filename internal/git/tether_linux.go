package git

import (
	"os/exec"
	"runtime"
	"syscall"
)

// groupOf puts cmd in a process group of its own, which its context's end
// kills whole, and has the kernel send it SIGTERM when airlock ends (the
// shell of tetherScript then kills its group).
func groupOf(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
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
