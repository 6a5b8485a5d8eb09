// Package repoguard fingerprints what a git worktree shares with the
// repository of the base it was made from: the common git directory's
// config files (and the per-worktree ones), its hooks, its submodules'
// config and hooks, and the branch the base has checked out.
//
// A worktree cannot be isolated from them, and a change there makes the
// user's own git run code or behave otherwise; what can be done is to
// notice the change (Fingerprint.Changed), which airlock then refuses to
// commit past and reports at every settle.
package repoguard
