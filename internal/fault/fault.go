// Package fault lets tests stop airlock at a named point, to prove that
// what is on disk at that instant is always recoverable, and to make races
// with other writers deterministic.
//
// AIRLOCK_TEST_FAULT=<point> makes the process SIGKILL itself when it
// reaches the point ("journal-synced", "applied", "apply:3", ...): no
// deferred cleanup runs, exactly as if the machine had died after the last
// fsync. AIRLOCK_TEST_PAUSE=<point>:<dir> (dir absolute) makes it create <dir>/reached at
// the point and wait until <dir>/continue exists, so a test can change the
// base at exactly that moment. Unset, a point costs one string comparison.
package fault

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Env and PauseEnv are the variables that arm a point.
const (
	Env      = "AIRLOCK_TEST_FAULT"
	PauseEnv = "AIRLOCK_TEST_PAUSE"
)

var (
	armed               = os.Getenv(Env)
	pausePoint, pauseAt = parsePause(os.Getenv(PauseEnv))
)

// parsePause splits "<point>:<dir>". A point may hold colons itself
// ("apply:3"), the directory is absolute: the split is at ":/".
func parsePause(v string) (string, string) {
	i := strings.Index(v, ":/")
	if i < 0 {
		return "", ""
	}
	return v[:i], v[i+1:]
}

// Point stops here if this is the armed point.
func Point(name string) {
	if armed != "" && armed == name {
		die()
	}
	if pausePoint != "" && pausePoint == name {
		pause()
	}
}

// Count stops here if the armed point is prefix:n, e.g. "apply:3" after
// the third operation.
func Count(prefix string, n int) {
	if armed != "" || pausePoint != "" {
		Point(prefix + ":" + strconv.Itoa(n))
	}
}

func die() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // never run on past the point
}

func pause() {
	os.WriteFile(filepath.Join(pauseAt, "reached"), nil, 0o600)
	for {
		if _, err := os.Stat(filepath.Join(pauseAt, "continue")); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
