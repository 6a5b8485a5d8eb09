// Package cli is airlock's command-line shell over package airlock: flags,
// the key=value settle block on stderr, --json output, and the mapping of
// errors to the exit codes of docs/reference.md, which happens in exactly one place
// (ExitCode).
//
// # Layout
//
// Each verb is one file, cmd_<verb>.go: new<Verb>Cmd builds the command
// (its flags and help) into a small <verb>Options struct, and
// run<Verb>(ctx, io, opts) does the work, so that what a flag means and
// what the verb does read apart (mcp and completion, which take no flags,
// keep their few lines in the constructor). What verbs share is beside them: root.go
// (the root command, the flags every transaction verb takes, the store),
// exit.go (exit codes), settle.go (reporting a settle), block.go (the
// airlock.* block), format.go (sizes, ages), events.go (show's events).
// What airlock returns as data (a refusal's remedy, an error's steps) is
// worded by internal/commandline.
package cli
