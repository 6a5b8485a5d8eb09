// Package launch runs the command of `airlock run` inside a staged
// workspace and reports how it ended, so that the caller can settle the
// transaction by that outcome alone.
//
// It guarantees that the command starts in the staged counterpart of the
// directory airlock was started in, with the caller's environment and
// airlock's own standard streams; that SIGINT and SIGTERM sent to airlock
// reach the command instead of killing airlock (without a controlling
// terminal the command leads a process group of its own, and they reach
// all of it at once); and that every way the command can end is told
// apart: its own exit code, death by a signal (reported as 128+N, the
// shell's convention), a command that was not found (127) or could not be
// executed (126), and an exit that could not be observed (an error).
// [Result.Interrupted] says whether SIGINT or SIGTERM reached airlock while
// the command ran, so that a caller can tell an exit of the command's own
// from one it was driven to.
//
// A command run with [Spec.EndGroup] (a validator) leads a group of its
// own under a terminal too, and the group ends with it: once the command
// has exited, what is left in its group is killed, before the command is
// reaped, so that the kill reaches no process that inherited a recycled
// pid. Processes that leave the group (setsid, a daemon) escape it.
//
// # Same path
//
// On Linux, where a mount namespace can be had (as root, or through an
// unprivileged user namespace), the command sees the staged workspace at the
// base's own path: a private mount namespace bind-mounts the staged tree over
// the base, so absolute paths, virtualenvs and build caches keep working and
// a write through the base's path lands in the staged tree. Go cannot mount
// between fork and exec, so the binary re-executes itself as a small helper
// that mounts, changes directory and then execs the command; [Init] is that
// helper's entry point and must be the first call in main. Where no
// namespace can be had, [Run] runs the command at the staged path instead
// and says why in [Result.Fallback].
//
// # A workspace mounted in the namespace
//
// A staged workspace that exists only once mounted ([Spec.Mount]: overlay
// without root) is mounted by the helper at the staged path, in the
// command's namespace, before the bind over the base. The mount then
// lives exactly as long as the command and whatever it leaves running;
// without a namespace there is nothing to fall back to, and Run fails.
//
// # The terminal
//
// A command the helper starts (contained, in same-path mode, or with a
// Mount) cannot type into a terminal: a seccomp filter, installed just
// before it starts and inherited by everything it starts, makes
// ioctl(TIOCSTI) and ioctl(TIOCLINUX) fail with EPERM, so that it cannot
// leave a line in the user's terminal for the shell to run once airlock
// returns. Every other system call is let through. Where the kernel has
// seccomp filters but refuses this one, Run does not start the command;
// where it has none, the command runs without it ([TerminalSupport] says
// which). A command run directly (no helper) has no filter.
package launch
