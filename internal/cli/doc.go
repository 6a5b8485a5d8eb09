// Package cli is airlock's command-line shell over package airlock: flags,
// the key=value settle block on stderr, --json output, and the mapping of
// errors to the exit codes of docs/reference.md, which happens in exactly one place
// (ExitCode).
package cli
