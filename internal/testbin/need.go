package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true, as CI services set
// it). There a test must not skip for a missing tool or kernel feature:
// CI prints no skips, so a proof that never ran would pass unseen.
func InCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// Missing stops a test that cannot run because something this machine
// should provide is missing (a tool, a kernel feature, a mount): it skips,
// saying what is missing, and under CI=true it fails saying the same, so
// the CI setup gets fixed instead of the test silently not running.
//
// A test that cannot run for a reason no setup fixes (root-only work run
// as another user, a file system that makes the case impossible) calls
// t.Skip itself.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s; under CI=true that fails the test instead of skipping it (.ci/run installs the tools CI needs)", msg)
	}
	t.Skip(msg)
}

// Require returns the path of the program name on PATH, or stops the test
// through Missing, saying why it needs the program.
func Require(t testing.TB, name, why string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed (%s)", name, why)
	}
	return p
}
