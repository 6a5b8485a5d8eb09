// Package torture tries to break airlock's guarantees from the outside: it
// builds the airlock binary once and drives it as a user would, killing it
// at random moments and at named fault points, tracing its syscalls,
// feeding it hostile trees and tampered state, racing it with other
// writers and running it out of disk space. It holds no code of its own;
// every guarantee of docs/reference.md has a test here whose job is to fail.
//
// # Modes
//
// By default each test runs at a size that keeps the whole package well
// under three minutes. The -torture.n flag (or AIRLOCK_TORTURE=N)
// multiplies the iterations and sizes for soak runs:
//
//	go test ./internal/torture -torture.n=20 -timeout=2h
//
// There is no switch that turns a failing guarantee into a log line: a
// known, unfixed bug is a failing test.
package torture
