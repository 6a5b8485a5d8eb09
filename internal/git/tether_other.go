//go:build !linux

package git

import (
	"os/exec"
	"syscall"
)

// groupOf puts cmd in a process group of its own, which its context's end
// kills whole. There is no parent-death signal here: a git that airlock's
// SIGKILL left behind ends by the bounds its transport was given.
func groupOf(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

func runPinned(cmd *exec.Cmd, _ bool) error { return cmd.Run() }
