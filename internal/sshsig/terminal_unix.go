//go:build unix

package sshsig

import (
	"os/exec"
	"syscall"
)

// noTerminal starts ssh-keygen in a session of its own, without a
// controlling terminal: a passphrase it would ask for on /dev/tty fails
// instead of hanging an agent's run (airlock never prompts). A key with a
// passphrase signs through ssh-agent, as git's would in batch use.
func noTerminal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
