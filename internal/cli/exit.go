package cli

import (
	"errors"

	"github.com/airlockdev/airlock"
)

// Exit codes of docs/reference.md.
const (
	exitOK       = 0
	exitRefused  = 75
	exitInternal = 125
)

// exitError carries an exit code decided by a command (1 for an invalid
// receipt), with a message to print or none.
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
	var rt *airlock.RemoteTimeoutError
	if errors.As(err, &rt) {
		// As a refusal: nothing changed, and trying again as it is may
		// succeed (75 is EX_TEMPFAIL).
		return exitRefused
	}
	var irq *airlock.InterruptedError
	if errors.As(err, &irq) {
		// As a shell reports a command a signal ended.
		return 128 + int(irq.Signal)
	}
	var c *airlock.CommandError
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return exitInternal
}

// silent reports whether err's exit code says it all: a command that ran
// and failed has already spoken on its own stderr.
func silent(err error) bool {
	var told *toldError
	if errors.As(err, &told) {
		return true
	}
	var x *exitError
	if errors.As(err, &x) {
		return x.msg == ""
	}
	var c *airlock.CommandError
	return errors.As(err, &c) && c.Err == nil
}
