package launch

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// wait waits for cmd, which has started, to end. With endGroup (the
// command leads a group of its own: Spec.EndGroup) it first waits for the
// command to exit without reaping it, kills what is left of its group,
// and only then reaps it: until then the command's pid names its group
// and no other, so the kill cannot reach a stranger that was given a
// recycled pid.
func wait(cmd *exec.Cmd, endGroup bool) error {
	if endGroup {
		pid := cmd.Process.Pid
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		for errors.Is(err, unix.EINTR) {
			err = unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		}
		if err == nil {
			// ESRCH: the group was the command alone.
			_ = unix.Kill(-pid, syscall.SIGKILL)
		}
	}
	return cmd.Wait()
}
