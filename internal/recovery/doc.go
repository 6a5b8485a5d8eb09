// Package recovery resolves an interrupted apply whose transaction's
// state is gone or cannot be read (Orphan): the journal that would roll
// the base back may have gone with it.
//
// What can still be known is checked and said, one note each: whether
// the base's receipt chain records the commit, what the apply left behind
// under its temporary names (removed, through the base's descriptor,
// never following a symlink), and, where the journal survives and
// verifies itself, the rollback from it. Then the in-flight marker is
// cleared, so that open, commit and gc work again. State someone else
// could have written is never read.
package recovery
