// Package airlock gives a process a transactional workspace over a
// directory: the process works in a staged copy, and its changes reach the
// real directory only through one all-or-nothing, fail-closed, journaled
// commit, or not at all.
//
// The command-line tool is a thin shell over this package; an agent harness
// can drive the same steps: Store.Open, Tx.Path, Tx.Changes, Tx.Commit,
// Tx.Discard and Store.Recover, or let Store.Run open a transaction, run a
// command in it and settle it by the command's exit code, as `airlock run`
// does.
//
// # Base
//
// The directory a transaction protects. It must be a directory, not / and
// not the user's home, and must neither contain nor lie inside the state
// root. Its identity (its file system's own, which survives a reboot where
// the file system has one, and its inode: see state.Identity) is recorded
// at open and checked at commit.
//
// # Surface
//
// The base minus the exclude selectors (gitignore syntax). Excludes are
// one-directional: an excluded path is not copied in, but a path the command
// creates under an excluded selector is part of the change set.
//
// # Staged workspace
//
// The private copy of the surface in which the command runs. It shares no
// inode with the base, so nothing written there reaches the base before a
// commit.
//
// # Change set
//
// Every path that differs between the staged workspace and the base as it
// was at open: added, modified (content, mode, symlink target, or kind) or
// deleted. A rename is a delete plus an add. Paths under a .git directory
// are never part of it. A commit freezes the change set into the
// transaction's state first, so the bytes that are checked are the bytes
// that land.
//
// # Journal
//
// Before a commit touches the base it writes, and fsyncs, a journal of every
// planned operation and a backup of everything those operations overwrite or
// remove. A commit that fails part-way is rolled back from it exactly; one
// that was killed is rolled back by Store.Recover.
//
// # Receipt
//
// The JSON record of a settled transaction: digests of the base before and
// after and of the change set, counts, outcome, refusal, and the digest of
// the previous receipt committed to the same base, sealed by a digest over
// all of it.
//
// # Refusal
//
// A commit that does not happen returns a *Refusal whose Kind says why
// (BaseDrift, ProtectedPathNotApproved, ...). A refusal leaves the base
// byte-for-byte as it was and keeps the transaction, which can be committed
// again once the cause is fixed.
package airlock
