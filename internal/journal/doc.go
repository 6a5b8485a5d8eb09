// Package journal applies a change set to the base in two phases, so that a
// crash at any instant leaves a base that recover can put back exactly.
//
// Phase one (Prepare) writes, before the base is touched at all, a journal
// naming every planned operation together with a backup of everything the
// operations will overwrite or remove, and makes them durable. Phase two
// (Apply) mutates the base only through safefs, never following a symlink:
// removals deepest first, then creations shallowest first, every new file
// and symlink first written under a temporary name beside its path, all of
// them made durable, and only then renamed into place; finally everything
// the apply changed is made durable. Each "made durable" is one flush of
// the file system (safefs.FSSync) where one stands for an fsync of each file
// and directory, and those fsyncs otherwise: durability costs a bounded
// number of flushes, not one per file. Restore undoes an apply, finished or not, from
// the journal and its backups alone, and proves the result by digest. It is
// idempotent: killed half-way, it can simply run again.
//
// A journal carries its own digest and every backup its content digest; a
// journal or backup that does not match is never acted on. Every copy of a
// file's bytes (a backup, a new file, a restored one) keeps its holes.
package journal
