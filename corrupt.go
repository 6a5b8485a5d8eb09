package airlock

import (
	"errors"

	"github.com/airlockdev/airlock/internal/state"
)

// CorruptError reports transaction state that cannot be trusted: a state
// file that does not decode, or an open record that no longer matches its
// digest. Nothing acts on such a transaction; inspect it, then remove it
// with `airlock gc ID`.
type CorruptError struct {
	Path string // the state file
	Line int    // 1-based line of the event log; 0 for a whole-file record
	err  error  // the error as airlock reports it, context included
}

func (e *CorruptError) Error() string { return e.err.Error() }
func (e *CorruptError) Unwrap() error { return e.err }

// exported gives *err its public type when the state layer found
// corruption, keeping its message and chain. Every exported method that
// reads state defers it: the internal error type is no part of the API.
func exported(err *error) {
	var pub *CorruptError
	var c *state.CorruptError
	if *err == nil || errors.As(*err, &pub) || !errors.As(*err, &c) {
		return
	}
	*err = &CorruptError{Path: c.Path, Line: c.Line, err: *err}
}
