// Package running keeps, in a state root, the registry of the contained
// commands running under it (a run's command, a validator) and the last
// moment it was seen quiet, with none running: what internal/pool needs to
// know that no process of any transaction can hold a pooled tree.
//
// # Why a quiet moment is enough
//
// Every process of a transaction is contained: it runs in a PID namespace
// that ends with its command, before the command's entry here is released.
// A process that holds a pooled tree (a descriptor, a working directory)
// after the tree settled got it, directly or through a chain of processes
// (a unix socket, a fork), from a process alive when the tree settled, or
// opened it by its path under the state root (which any process of the
// user can: docs/reliability.md). So once there was a moment after the
// settle at which no contained command of this state root was running, no
// process of any transaction can hold the tree afterwards: every one alive
// at the settle was gone at that moment, and every one started later
// started from nothing that held it.
//
// # What it guarantees
//
//   - [Registry.Start] registers a command before it starts: a file per
//     command in the registry's directory, held with flock(2) by this
//     process until [Entry.Done] (after every process of its namespace has
//     ended). A crashed airlock's lock is released by the kernel; its file
//     is then found stale, removed, and that look does not count as quiet
//     (its namespace may still be dying), the next one does.
//   - [Entry.Uncontained] marks that the command ran without a PID
//     namespace: what it left running is unbounded, so the registry is
//     never quiet again until the machine reboots (the mark names the boot).
//   - Every look at the registry, every registration and every release is
//     made under the registry's lock (a flock on its lock file), so a look
//     sees one instant: no command starts while it looks. A look that finds
//     nothing running advances the quiet generation (the file quiet,
//     written by rename): [Entry.Done] looks whenever a command ends.
//   - [Registry.Mark] reads the generation (for a tree about to be
//     pooled), and [Registry.QuietSince] reports whether a moment that had
//     nothing running came after that mark: nothing is running now (then
//     it records it), or the generation moved on. Any error, a lock not
//     had in time, a file that cannot be read or is not what airlock
//     writes, answers no: fail closed.
package running
