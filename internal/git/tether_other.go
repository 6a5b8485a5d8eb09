//go:build !linux

package git

import (
	"os/exec"
	"syscall"
)

// groupOf puts cmd in a session of its own, whose process group its
// context's end kills whole, and which has no controlling terminal for a
// prompt to wait at (see tether_linux.go). There is no parent-death
// signal here: a git that airlock's SIGKILL left behind ends by the
// bounds its transport was given.
func groupOf(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

func runPinned(cmd *exec.Cmd, _ bool) error { return cmd.Run() }
