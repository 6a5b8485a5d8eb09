// Package cli is airlock's command-line shell over package airlock: flags,
// the key=value settle block on stderr, --json output, and the mapping of
// errors to SPEC.md's exit codes, which happens in exactly one place
// (ExitCode).
package cli
