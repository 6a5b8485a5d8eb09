// Package stage makes the staged workspace of a transaction: a private tree
// that starts equal to the base's surface and shares no inode with it, so
// that nothing written there can reach the base before a commit.
//
// A [Backend] is one way of making that tree. Each reports whether it works
// on this machine and why not ([Backend.Supported]), stages a tree
// ([Backend.Stage]) and removes one ([Backend.Remove]). [Get] maps the names
// that --backend accepts to a backend.
//
// Staging measures the base and the staged tree in the same call, so the
// caller holds both manifests: [Result.Base] is the base as the staged tree
// was made from it (the change set's "before"), and [Result.Staged] is the
// staged tree as it stood when staging ended, so that what a command changed
// there can later be told by stat alone.
//
// FIFOs, sockets and device nodes are never staged: they stay in
// [Result.Base] as [manifest.KindOther] entries and each one is named in
// [Result.Warnings]. Git metadata is staged like any other directory, so that
// git works in the staged tree.
package stage
