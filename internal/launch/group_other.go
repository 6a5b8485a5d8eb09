//go:build !linux

package launch

import (
	"os/exec"
	"syscall"
)

// wait waits for cmd, which has started, to end; with endGroup (the
// command leads a group of its own: Spec.EndGroup) it then kills what is
// left of the group. Without waitid's WNOWAIT the command is reaped first,
// so in the moment between, its pid (the group's id) could be given to
// another process; Linux closes that window.
func wait(cmd *exec.Cmd, endGroup bool) error {
	err := cmd.Wait()
	if endGroup {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
}
