// Package git is the one way airlock runs git. Every git command airlock
// issues — reading what a base's repository knows (HEAD, dirty paths, merge
// ancestors), making and removing worktrees, fetching from and pushing to
// the remote a landing names, asking which version is installed — goes
// through [Repo.Run] or [Run], so that each is hardened the same way:
//
//   - The repository is the one the command names ([In] a directory, or
//     [At] a git directory), never one a variable left in airlock's
//     environment points at: GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE and the
//     others that relocate the repository, its index, work tree or objects
//     are dropped, as is configuration a parent git passed down for one
//     command only (environ.go says which and why).
//   - None of the user's code runs: hooks are off (core.hooksPath=/dev/null)
//     and no fsmonitor daemon is started. git never waits on a terminal or an
//     askpass window for credentials (GIT_TERMINAL_PROMPT=0, GIT_ASKPASS
//     empty).
//   - Pathspecs are literal (GIT_LITERAL_PATHSPECS=1): a file name is never a
//     glob or pathspec magic. Callers put paths after "--" or use -z.
//   - git runs as long as its context allows and no longer: when the context
//     ends git is killed, and its pipes are abandoned shortly after even if
//     a child of git still holds them.
//     A command against a remote runs [Repo.Tethered]: in a process group
//     of its own, killed whole when the context ends, and when airlock
//     ends, even by SIGKILL, so that no remote helper or ssh outlives it.
//   - A failure is an [*Error] naming the command, the repository and what
//     git said on stderr, in English (LC_ALL=C), so that callers may match it.
//
// The user's standing configuration (the system, global and repository
// files) still applies: it holds safe.directory, which decides whether git
// works in a repository at all, and settings such as core.autocrlf that
// decide whether a file reads as changed.
//
// Tests may run git directly as an oracle; no other package of airlock
// execs git.
package git
