// Package airlock gives a process a transactional workspace over a
// directory: the process works in a staged copy, and its changes reach the
// real directory only through one all-or-nothing, fail-closed, journaled
// commit, or not at all. The command-line tool is a thin shell over it.
//
// A harness opens a Store, then Store.Open, writes under Tx.Path, looks at
// Tx.Changes or Tx.Diff, and settles with Tx.Commit or Tx.Discard; or lets
// Store.Run open, run a command and settle by its exit code. Store.Recover
// rolls back a commit that was killed part-way. The words it uses:
//
//   - Base: the directory a transaction protects; its identity is recorded
//     at open and checked at commit.
//   - Surface: the base minus the exclude selectors (gitignore syntax).
//   - Staged workspace: the private copy of the surface the work happens
//     in; it shares no inode with the base.
//   - Change set: every path that differs between the staged workspace and
//     the base as it was at open (never a path under .git), frozen before
//     it is checked, so that the bytes checked are the bytes that land.
//   - Journal: every planned operation and a backup of what it replaces,
//     fsynced before the base is touched; a failed commit is rolled back
//     from it exactly.
//   - Receipt: the sealed JSON record of a settle, chained to the previous
//     receipt of the same base.
//   - Refusal: a commit that does not happen returns a *Refusal (its Kind
//     and Remedy are data); the base is as it was and the transaction is
//     kept, to be committed again once the cause is fixed.
package airlock
