// Package state holds airlock's state root — transaction records, event logs
// and the per-base locks that serialise commits — and guarantees that it
// never reads or acts on state it cannot trust.
//
// Every directory it creates is 0700 and every file 0600. State that is not
// the regular file or directory expected where it is found (a symlink, a
// FIFO, a device), that is not owned by the current user, or that is writable
// by group or others is refused with an *UnsafeError naming it: it is checked
// with Lstat, or opened with O_NOFOLLOW and checked with fstat, before it is
// read or acted on, so a planted symlink is refused rather than followed.
// Subtrees that other packages read by path (a transaction's journal) are
// walked and checked the same way by Tx.CheckTree first. Lock files must
// in addition be private (0600) and have a single name, since flock(2)
// needs only a descriptor open for reading.
//
// The state root's location is checked too, as ssh checks the path to
// authorized_keys: every directory on its way, symlinks resolved, must be
// owned by the user or root and not writable by group or others unless it
// is sticky, or Open refuses with an *UnsafeLocationError naming it.
//
// # Layout
//
//	<root>/tx/<id>/          one directory per transaction
//	    open.json            immutable open record, written once
//	    events.jsonl         append-only event log, one JSON object a line
//	    port                 the transaction's port base, recorded under the global lock
//	    ...                  other files the caller writes through Tx.Path
//	<root>/bases/<key>/      per-base state; key = the base directory's Identity: its file
//	                         system's (fsid-…, uuid-…, or dev-<device> where it has none)
//	                         and its inode (earlier versions: 32 hex digits, its device and
//	                         inode or the sha256 of its path, moved to the identity's name
//	                         on first use where the directory is there to measure)
//	    lock                 flock(2) file serialising commits on that base
//	    base.json            path, file system, device last seen, inode and birth time
//	    inflight             present while an apply journal is in flight: names the tx
//	    head                 digest of the last receipt committed to the base
//	    receipts/            the receipt chain, one <digest>.json per commit
//	    originals/           content the base's commits replaced (internal/originals)
//	<root>/bases/retired/    state of bases that are gone, moved aside, never deleted
//	<root>/inflight/<key>.json  one per apply in flight (a superset of the inflight
//	                         markers): the path it was made over and the base's identity,
//	                         so that any base its path or identity names refuses
//	<root>/trash/            transaction directories being removed by gc
//	<root>/lock              global flock for id and port allocation
//	<root>/txindex.json      the transactions known settled, so that an open reads the
//	                         records of open ones alone (see TxIndex): a cache, rebuilt
//	                         from the records when missing, torn or not the user's own
//	<root>/fsclock.json      the measured timestamp clocks of the file systems the root
//	                         was on (internal/fsclock), by file-system id: a cache
//
// # Durability
//
// Small state files are replaced atomically and durably (temp file, fsync,
// rename, fsync of the directory). Write-once records are published with
// link(2), so they appear complete or not at all and are never overwritten.
// Each event is appended with one write and fsync'd before Append returns.
// WriteUnsynced and WriteOnceUnsynced leave the directory's fsync to the
// caller's next durable write there (the file's bytes are still fsync'd
// before its name appears). txindex.json is a cache: replaced by rename
// without fsync, sealed by a digest, rebuilt from the records when torn.
package state
