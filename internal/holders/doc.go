// Package holders finds the processes that can still reach a directory
// tree, by looking through /proc: the fallback proof that a pooled staged
// tree has no writer left, for commands that ran without a container of
// their own (internal/launch).
//
// [Find] reports every process that has the tree as its working or root
// directory, holds a descriptor or a mapping of one of its inodes (in any
// thread: a thread can unshare its working directory and descriptor
// table), or sees a mount of any part of it in any mount namespace; a loop
// device backed by one of its files; and, failing closed, every process of
// this user that started after a given moment and cannot be inspected.
// [Marked] lists the processes whose environment carries a marker, which
// names what a command left running. Without /proc (darwin) Find refuses:
// no tree is proved free there.
package holders
