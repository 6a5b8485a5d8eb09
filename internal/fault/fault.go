// Package fault lets tests kill airlock at a named point, to prove that
// what is on disk at that instant is always recoverable.
//
// Set AIRLOCK_TEST_FAULT to a point name ("journal-synced", "applied",
// "apply:3", ...) and the process SIGKILLs itself when it reaches it: no
// deferred cleanup runs, exactly as if the machine had lost power after the
// last fsync. Unset, a point costs one string comparison.
package fault

import (
	"os"
	"strconv"
	"syscall"
)

// Env is the variable that names the point to die at.
const Env = "AIRLOCK_TEST_FAULT"

var armed = os.Getenv(Env)

// Point dies here if this is the armed point.
func Point(name string) {
	if armed != "" && armed == name {
		die()
	}
}

// Count dies here if the armed point is prefix:n, e.g. "apply:3" after the
// third operation.
func Count(prefix string, n int) {
	if armed != "" && armed == prefix+":"+strconv.Itoa(n) {
		die()
	}
}

func die() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not deliverable late, but never run on past the point
}
