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
// there can later be told by stat alone — except for files changed within
// their file system's timestamp window of being measured (Request's clocks,
// internal/fsclock), whose digests staging records so that bytes decide.
//
// # Backends
//
// copy copies bytes (a file's data, its holes kept); reflink clones files
// and refuses where the file system cannot; both give snapshot isolation:
// the command sees the base as it was at open. overlay mounts overlayfs with the base as the lower
// layer; its isolation is read-committed: paths the command has not
// written read through to the live base. It implements [Differ]: the change
// set comes from its upper layer, not from walking the tree, and the base
// entry of each change is the base path now when its ctime shows it
// unchanged since open, else an entry no stat can match, so that the
// commit's drift check refuses (or merges) rather than overwrite an edit
// the command did not see. Without root, overlay is [Hoster]: a run's
// workspace is hosted (Request.Hosted), its overlay mounted by the
// command's own user namespace ([HostedMount]) and never in airlock's.
// [Choose] resolves auto to reflink where the state
// file system clones files and the base is on it, else copy; never overlay.
//
// FIFOs, sockets and device nodes are never staged: they stay in
// [Result.Base] as [manifest.KindOther] entries and each one is named in
// [Result.Warnings]. Git metadata is staged like any other directory, so that
// git works in the staged tree.
//
// worktree (never chosen by auto) makes the staged tree a git worktree of
// the base's HEAD on a branch airlock/<id>, registered in the base's
// repository, then copies (or clones) the base's surface into it exactly as
// copy does and gives it the base's index: the staged tree is the base's
// working tree, and git there reads as git in the base. Its .git is the
// worktree's own gitfile, which the manifests record in place of the base's
// .git directory. Worktrees are added and removed under a flock in the
// repository's common git directory. Remove deletes the branch only when it
// holds no commit that another ref lacks ([WorktreeBranch] reports what it
// did); [SweepWorktrees] finds worktrees airlock registered that no
// transaction owns any more. Sweeping lives here, beside the backend,
// because it is the backend's Remove applied to worktrees whose
// transaction is gone: it reads the backend's own worktree records and
// takes the same lock.
//
// [Refresh] makes an existing tree (a pooled one: internal/pool decides
// which, and proves it free and untouched) equal to what staging afresh
// would make, copying only what differs.
package stage
