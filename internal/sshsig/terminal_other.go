//go:build !unix

package sshsig

import "os/exec"

// noTerminal: only unix has sessions to leave.
func noTerminal(*exec.Cmd) {}
