// Package safefs is the one traversal-safe layer through which airlock
// mutates a user's base tree: every path is resolved beneath an open root
// directory without following a symlink in any component, so no symlink —
// planted before or during an apply — can redirect a read or a write outside
// the root or into another subtree of it.
//
// A [Root] holds a descriptor for the base directory. Each operation takes a
// slash-separated path relative to it, rejects anything that is not a clean
// relative path (absolute, "..", ".", empty components, NUL) with
// [ErrEscape] before making any system call, opens the parent directory
// without following symlinks, and then acts on the last component with the
// *at system calls relative to that parent descriptor, never following a
// final symlink either. A symlink met on the way fails with [ErrSymlink].
//
// Go's os.Root is not enough for this: it blocks ".." and absolute escapes
// but follows a symlink that stays inside the root, so a planted
// "dirlink -> real" would turn a write to dirlink/x into one to real/x.
//
// On Linux the parent is opened with openat2(2) and
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, in chunks when
// the path is longer than PATH_MAX. Where openat2 is missing (ENOSYS, Linux
// before 5.6), and always on macOS, the parent is opened one component at a
// time with openat(O_NOFOLLOW|O_DIRECTORY). Either way a concurrent rename of
// a directory can move where a write lands within the tree, as it could for
// any program, but it can never make the write follow a symlink.
//
// The same layer reads a tree that someone else may be rearranging while
// it is read: a commit freezes a staged workspace the agent can still write
// to only through [Root.OpenRegular], which opens nothing but a regular file
// and reports the opened file's own stat facts for the caller to match.
//
// The package also holds the durable write helpers for airlock's own state
// files ([WriteFile], [SyncDir]), which live outside any base tree, and
// [FSSync], which makes many files written to one file system durable in one
// syncfs(2) where that call can stand for an fsync of each.
package safefs
