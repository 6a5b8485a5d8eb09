// Package filecopy copies a regular file's content into another file and
// keeps the source's holes. It is the one way airlock copies file bytes:
// staging (and the refresh of a recycled tree), freezing a change set, the
// originals store, the journal's backups, the apply and every restore copy
// through [Copy].
//
// Only the extents that hold data are read and written; they are found with
// lseek(2) SEEK_DATA and SEEK_HOLE, and the copy is truncated to the
// source's length at the end, so a hole of the source is a hole of the copy
// and a 1 GiB image holding a few KiB of data costs a few KiB again. A hole
// reads as zeros: the copy has the source's bytes exactly, and a digest of
// them ([Options.Hash], which is fed the zeros of each hole) is the digest
// of the logical content, whatever the holes are.
//
// Where no digest is taken, the data extents are copied with
// copy_file_range(2) where the kernel offers it (through os.File.ReadFrom,
// which falls back to read and write where it does not: EXDEV, ENOSYS,
// EOPNOTSUPP, and on macOS always); btrfs and XFS answer it with a reflink.
// With a digest every byte goes through memory, so that the digest is of
// the very bytes written, never of bytes the kernel copied unseen.
//
// A file system without SEEK_DATA (lseek refuses it with EINVAL or
// ENOTSUP) is copied as one data extent, which is a dense copy, as before.
// A file that changes while it is copied may be copied as any mix of its
// versions: every caller checks the source's stat facts after the copy and
// treats a change as drift. Copy does not fsync: each caller makes the copy
// durable before any name points at it.
package filecopy
