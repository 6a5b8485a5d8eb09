// Package fault lets tests stop airlock at a named point, to prove that
// what is on disk at that instant is always recoverable, and to make races
// with other writers deterministic.
//
// The points are live only in a build with the tag airlock_faults (the
// tests build airlock that way). In any other build, the one users run,
// Point and Count are empty, the compiler removes their calls, and the
// variables below are never read: nobody can kill or hang a real commit
// through the environment.
//
// AIRLOCK_TEST_FAULT=<point> makes the process SIGKILL itself when it
// reaches the point ("journal-synced", "applied", "apply:3", ...): no
// deferred cleanup runs, exactly as if the machine had died after the last
// fsync. AIRLOCK_TEST_PAUSE=<point>:<dir> (dir absolute) makes it create
// <dir>/reached at the point and wait until <dir>/continue exists, so a
// test can change the base at exactly that moment. Unset, a point costs
// one string comparison. AIRLOCK_TEST_OFF=contain,... turns off a
// mechanism this machine has (Off), so that a test can prove the fallback
// of machines without it.
package fault

// Env and PauseEnv are the variables that arm a point in a build with the
// tag airlock_faults; OffEnv turns mechanisms off (Off).
const (
	Env      = "AIRLOCK_TEST_FAULT"
	PauseEnv = "AIRLOCK_TEST_PAUSE"
	OffEnv   = "AIRLOCK_TEST_OFF"
)
