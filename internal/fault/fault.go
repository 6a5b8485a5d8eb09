//go:build airlock_faults

package fault

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Enabled reports whether this build has live fault points: it was made
// with the tag airlock_faults.
const Enabled = true

var (
	armed               = os.Getenv(Env)
	pausePoint, pauseAt = parsePause(os.Getenv(PauseEnv))
	off                 = os.Getenv(OffEnv)
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

// Off reports whether AIRLOCK_TEST_OFF (a comma-separated list) names
// the mechanism name: a test turns off what this machine has, to prove the
// fallback that machines without it take.
func Off(name string) bool {
	for _, n := range strings.Split(off, ",") {
		if n == name {
			return true
		}
	}
	return false
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

// WhenDone creates <dir>/<name>, in the directory of the armed pause, once
// ctx is done; the returned function stops it (call it when the work ctx
// governs has ended). Without an armed pause it does nothing.
func WhenDone(ctx context.Context, name string) (stop func() bool) {
	if pauseAt == "" {
		return func() bool { return false }
	}
	return context.AfterFunc(ctx, func() {
		os.WriteFile(filepath.Join(pauseAt, name), nil, 0o600)
	})
}
