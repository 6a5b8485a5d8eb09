package git

import (
	"context"
	"os/exec"
)

// Tethered is r with each command run, with its children (a remote
// helper, ssh, fetch-pack), in a session without a terminal and a process
// group of its own that ends when the call's context does and when
// airlock does, even by SIGKILL. It is
// for commands that talk to a remote: those are the ones that can hang on
// a network that never answers, and whose children git leaves running
// when git itself is killed.
func (r Repo) Tethered() Repo {
	r.tethered = true
	return r
}

// tetherScript runs git under a shell that leads the process group: when
// airlock ends, the kernel sends the shell SIGTERM (the parent-death
// signal, set in tether_linux.go) and it kills the whole group, git's
// children with it. git alone could not do this: a parent-death signal is
// not inherited by git's children, and a SIGKILLed git does not end them.
// git runs in the background so that the trap runs while it waits; its
// standard input is passed on explicitly, as a background job's would be
// /dev/null.
const tetherScript = `trap 'kill -KILL 0' TERM HUP INT
exec 3<&0
"$@" <&3 3<&- &
wait $!`

// command is the exec.Cmd that runs git with argv: tethered, git under
// tetherScript in a process group of its own, the whole group killed
// when ctx ends.
func (r Repo) command(ctx context.Context, argv []string) *exec.Cmd {
	if !r.tethered {
		return exec.CommandContext(ctx, "git", argv...)
	}
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", tetherScript, "sh", "git"}, argv...)...)
	groupOf(cmd)
	return cmd
}
