package state

import (
	"fmt"
)

// UnsafeError reports state that airlock refuses to read or act on: the
// wrong file type, the wrong owner, or group/other write permission.
type UnsafeError struct {
	Path   string // the offending file or directory
	Reason string // what is wrong with it, e.g. "is a symlink, not a regular file"
	// Fix, when set, replaces the general advice, for state whose removal
	// would lose something (a journal's backups).
	Fix string
}

func (e *UnsafeError) Error() string {
	fix := e.Fix
	if fix == "" {
		fix = "fix ownership/permissions (owner: you, mode 0700 for directories, 0600 for files) or remove it"
	}
	return fmt.Sprintf("unsafe airlock state %s: %s; airlock will not read or act on it: %s", e.Path, e.Reason, fix)
}

// CorruptError reports a state file whose content cannot be decoded. A
// transaction with corrupt state cannot be trusted, so callers must not act
// on it.
type CorruptError struct {
	Path string // the state file
	Line int    // 1-based line of an event log, 0 for whole-file records
	Err  error  // the decoding failure
}

func (e *CorruptError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("corrupt state file %s line %d: %v; the transaction cannot be trusted: inspect it, then remove it with airlock gc ID", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("corrupt state file %s: %v; the transaction cannot be trusted: inspect it, then remove it with airlock gc ID", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }
