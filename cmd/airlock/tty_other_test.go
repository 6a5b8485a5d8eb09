//go:build !linux

package main_test

import (
	"errors"
	"os/exec"
)

// onTerminal needs Linux's pseudo-terminals (TIOCGPTN), which the suite
// runs on (docs/testing.md).
func onTerminal(*exec.Cmd) (string, error) {
	return "", errors.New("a pseudo-terminal for a test is made on Linux only")
}

func screen(string) (string, error) { return "", errors.New("Linux only") }
