// Package watch tells which paths of a staged tree a command wrote while
// it ran, so that the change set is read from those paths instead of a
// walk of the whole tree.
//
// A Watch is an inotify instance with a watch on every directory of the
// tree, set before the command starts and read until every process of
// the command has ended. Every change to an entry of a watched directory
// (a write, a truncation, a new mode or times, a creation, a deletion, a
// rename in or out) is reported to that directory's watch with the
// entry's name, by the kernel, as the system call makes it: whatever
// wrote it (the command, a process it handed a descriptor to, a
// container's daemon writing through a bind mount), and however it
// reached the file (another mount of the same directory, a descriptor
// opened before a rename). What the names do not cover is named as a
// whole subtree to measure: a directory made, moved or deleted during the
// run (its own entries have no watch).
//
// Two things could change a file's bytes without an event naming its
// path, and each is closed by construction, not looked for: a second name
// for the file (a hard link: a write through one name is reported under
// that name only), and a file opened by handle, whose dentry the kernel
// may not connect to its directory. In a watched run the command and
// everything it starts cannot make either: link(2), linkat(2) and
// open_by_handle_at(2) fail (launch.Spec.Watched); airlock's staging never
// gives two tree paths one file; and a file that has another name after
// all (a process airlock did not start made it) makes the measurement
// fail rather than trust the names (manifest.Patch).
//
// An overflow of the kernel's event queue, a watch limit, or anything
// else the watch cannot account for makes Stop return an error: the
// caller walks the tree instead, so correctness never depends on the
// watcher.
package watch
