// Package journal applies a change set to the base in two phases, so that a
// crash at any instant leaves a base that recover can put back exactly.
//
// Phase one (Prepare) writes, before the base is touched at all, a journal
// naming every planned operation together with a backup of everything the
// operations will overwrite or remove, and fsyncs them. Phase two (Apply)
// mutates the base only through safefs, never following a symlink: removals
// deepest first, then creations shallowest first, every file written to a
// temporary name, fsync'd, then renamed into place, and finally every
// touched directory fsync'd. Restore undoes an apply, finished or not, from
// the journal and its backups alone, and proves the result by digest. It is
// idempotent: killed half-way, it can simply run again.
//
// A journal carries its own digest and every backup its content digest; a
// journal or backup that does not match is never acted on. Every copy of a
// file's bytes (a backup, a new file, a restored one) keeps its holes.
package journal
