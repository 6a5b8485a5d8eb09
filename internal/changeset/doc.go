// Package changeset computes what a command changed: the diff of the staged
// tree against the base as it was at open, as added, modified and deleted
// paths with the base and result entry of each.
//
// The diff compares stat facts first and hashes only what stat cannot clear,
// so its cost follows the change, not the tree. Stat clears a staged file
// only where staging recorded no digest for it: a file it measured within
// its file system's timestamp window of a change carries one, and its bytes
// decide. Freeze then copies every changed file's bytes into the
// transaction's state (holes kept: a sparse file costs its data) and
// records their digest: the bytes that are checked are the bytes that
// land, whatever the staged tree does afterwards.
//
// Paths under a .git directory are never part of a change set; they are
// counted so that callers can report them.
package changeset
