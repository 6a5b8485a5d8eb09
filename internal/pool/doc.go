// Package pool keeps the staged trees of settled copy-backend transactions,
// a few per base, and makes the next transaction's workspace from one of
// them by copying only what differs from the base (recycling).
//
// It guarantees that a pooled tree becomes a workspace only if no process
// of its transaction can reach it and nothing wrote it after it settled:
//
//   - [Account] accounts for a transaction's processes when its command
//     ends: by construction first (every process ended with the command's
//     PID namespace, launch.Result.Contained), the /proc scan for what it
//     left running as the fallback. [Put] pools a tree only when they are
//     all gone: contained, or uncontained with nothing left running. It
//     pools only the very directory staging made, measured by the settling
//     walk, and records that walk, the base versions its untouched files
//     were copied from ([Source]), and whether the run was contained.
//   - [Refresh] proves, in this order: no process can reach the tree
//     (skipped for a contained run's tree; otherwise the /proc scan of
//     internal/holders over the inodes the pooled record names, [ErrHeld]),
//     then nothing wrote it (a walk that must match the pooled record,
//     [ErrTouched]). The walk comes last so that it is taken when no writer
//     can be left; only then does stage.Refresh reconcile the tree with the
//     base.
//   - [Take] claims a slot by rename (one open wins) and checks it is the
//     directory that was pooled; a tree that fails any proof is deleted,
//     never reused, and the caller stages afresh.
//
// [Trim] and [Collect] bound the pool ([Max] trees per base, [MaxAge]);
// [Supported] is false where no /proc can prove a tree free: nothing is
// pooled there.
package pool
