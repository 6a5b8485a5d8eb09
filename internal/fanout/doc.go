// Package fanout runs the independent steps of a loop on several
// goroutines: the per-file work of a commit (freezing a change set's
// files, writing an apply's new files), whose cost on a file system is
// mostly the kernel's and spreads over the machine's cores.
//
// A step's error stops the handing out of further steps, and the error
// reported is the one the same loop run in order would have stopped at:
// steps are handed out in index order, so every step before a failing one
// has run when it is reported.
package fanout
