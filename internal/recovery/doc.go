// Package recovery resolves the interrupted applies that cannot be rolled
// back through their transaction: one whose transaction's state is gone or
// cannot be read (Orphan), and one over a base that no longer exists
// (Gone).
//
// What can still be known is checked and said, one note each: whether
// the base's receipt chain records the commit, what the apply left behind
// under its temporary names (removed, through the base's descriptor,
// never following a symlink), and, where the journal survives and
// verifies itself, the rollback from it. A base that is gone keeps its
// journal, moved beside the base's retired state: its backups are the only
// copy of what the base held. Then the in-flight marker is cleared, so
// that open, commit and gc work again. State someone else could have
// written is never read.
package recovery
