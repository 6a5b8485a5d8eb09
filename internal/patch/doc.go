// Package patch renders a change set as a git-style patch that `git apply`
// (with --binary, in a copy of the base, repository or not) turns into the
// new tree byte for byte, and summarises it as `git diff --stat` and
// `git diff --name-status` would.
//
// # Format
//
// The patch is what `git diff --binary --full-index --no-renames` prints:
// `diff --git` headers with git's path quoting (core.quotePath=true, so
// control characters, quotes, backslashes and every byte from 0x7f up are
// escaped), `new file mode`, `deleted file mode`, `old mode`/`new mode`, an
// `index` line with full blob ids, unified hunks with three lines of
// context, and `GIT binary patch` literals (forward and reverse) for content
// that holds a NUL byte anywhere. Symlinks are mode 120000 with their target
// as content. A change between a file and a symlink is a deletion followed
// by an addition, as git prints it. Lines keep their bytes exactly: CR
// before LF stays, and a missing final newline is marked.
//
// # What a git patch cannot carry
//
// Git records files and symlinks only, and of a file's permissions only the
// owner-executable bit. So directories never appear (an empty directory that
// is added, or kept empty by deletions, is lost on `git apply`, which also
// removes directories that its deletions leave empty), and a permission
// change other than the executable bit (0644 to 0600, setuid, sticky) is not
// printed; `git apply` writes files with 0666 or 0777 less its umask. Gaps
// lists what a change set holds that the patch leaves out, so that a caller
// can say so.
//
// Some of what `git apply` does depends on where it runs, not on the patch.
// A repository whose object format is sha256 rejects the sha1 blob ids of
// binary hunks. A repository with end-of-line conversion (core.autocrlf,
// eol attributes) rewrites line endings as it writes. And inside a
// repository the patch's paths are relative to the repository's top, so a
// base that is a subdirectory of one needs
// `git apply --directory=<base relative to the top>`.
package patch
