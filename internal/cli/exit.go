package cli

import (
	"errors"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/launch"
)

// Exit codes of docs/reference.md.
const (
	exitOK       = 0
	exitRefused  = 75
	exitInternal = 125
)

// exitError carries an exit code decided by a command (the command's own
// code for `run`, 1 for an invalid receipt) without a message to print.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// ExitCode maps an error to the exit codes of docs/reference.md.
func ExitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var x *exitError
	if errors.As(err, &x) {
		return x.code
	}
	var r *airlock.Refusal
	if errors.As(err, &r) {
		return exitRefused
	}
	var e *launch.ExecError
	if errors.As(err, &e) {
		return e.ExitCode()
	}
	return exitInternal
}
