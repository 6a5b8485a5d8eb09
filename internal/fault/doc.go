// Package fault lets tests stop airlock at a named point, to prove that
// what is on disk at that instant is always recoverable, and to make races
// with other writers deterministic.
//
// The points are live only in a build with the tag airlock_faults (the
// tests build airlock that way). In any other build, the one users run,
// Point, Count and WhenDone are empty, the compiler removes their calls,
// and the variables below are never read: nobody can kill or hang a real commit
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
//
// While a pause is armed, WhenDone(ctx, name) also creates <dir>/<name>
// once ctx is done: a caller's cancel reaches the process on its own
// schedule (an MCP client's notifications/cancelled is read by another
// goroutine), and a test that holds a pause point until the file exists
// knows the process has seen it, instead of guessing how long that takes.
package fault

// Env and PauseEnv are the variables that arm a point in a build with the
// tag airlock_faults; OffEnv turns mechanisms off (Off).
const (
	Env      = "AIRLOCK_TEST_FAULT"
	PauseEnv = "AIRLOCK_TEST_PAUSE"
	OffEnv   = "AIRLOCK_TEST_OFF"
)
