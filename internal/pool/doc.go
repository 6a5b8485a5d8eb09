// Package pool keeps the staged trees of settled copy-backend transactions,
// a few per base, and makes the next transaction's workspace from one of
// them by copying only what differs from the base (recycling).
//
// It guarantees that a pooled tree becomes a workspace only if no process
// of any transaction of the state root can reach it and nothing wrote it
// after it settled:
//
//   - [Account] accounts for a transaction's processes when its command
//     ends, by construction alone: every process ended with the command's
//     PID namespace (launch.Result.Contained). [Put] pools a tree only
//     then: an uncontained run's tree, or one whose command airlock did not
//     run, is never pooled. It pools only the very directory staging made,
//     measured by the settling walk, and records that walk, the base
//     versions its untouched files were copied from ([Source]), and the
//     state root's quiet generation once the transaction's processes had
//     all ended (internal/running).
//   - [Take] reuses a tree only after a moment, later than that mark, at
//     which no contained command of the state root was running
//     (running.Registry.QuietSince): a process holding the tree afterwards
//     would have had it from one alive at the settle, and none was left.
//     While commands run without a pause since the settle (concurrent
//     transactions), the tree stays pooled and the open copies afresh.
//   - Take claims a slot by rename (one open wins) and checks it is the
//     directory that was pooled; then [Refresh] proves nothing wrote it (a
//     walk that must match the pooled record, [ErrTouched]), taken when no
//     writer can be left, and only then does stage.Refresh reconcile the
//     tree with the base. Both walks, side by side, measure every entry,
//     and take a directory's names from the pooled manifests only where
//     its stat proves them unchanged (manifest.Since, [Pooled.Listed]). A tree that fails a proof is deleted, never
//     reused, and the caller stages afresh.
//
// [Trim] and [Collect] bound the pool ([Max] trees per base, [MaxAge]);
// [Supported] is false off Linux, where no command is contained: nothing
// is pooled there.
package pool
