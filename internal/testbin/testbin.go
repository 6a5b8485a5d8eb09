// Package testbin builds the airlock binary once for a test package that
// drives it as a user would (real processes, real directories), so that
// every such package runs the very program users run, with one difference:
// the tests' binary is built with the tag airlock_faults, which makes the
// fault and pause points live (internal/fault). It also runs the
// processes such tests start (Start, Run): each with one environment
// (Environ), bounded by a timeout that makes a hang a failure, and its
// settle block read strictly (Result.Block).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// FaultsTag is the build tag that makes the fault and pause points live.
const FaultsTag = "airlock_faults"

// Main builds ./cmd/airlock with the tag airlock_faults into a temporary
// directory, stores its path in *bin, runs the tests and removes the
// binary. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &bin)) }
func Main(m *testing.M, bin *string) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbin: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "airlock-test-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbin: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "airlock")
	if err := build(root, *bin, "-tags", FaultsTag); err != nil {
		fmt.Fprintf(os.Stderr, "testbin: %v\n", err)
		return 1
	}
	return m.Run()
}

// BuildRelease builds ./cmd/airlock as a user builds it (plain go build, no
// tags, plus the go build flags given, such as release.sh's -ldflags) into
// a directory the test removes, and returns its path: the test of what the
// tests' own binary differs in.
func BuildRelease(t testing.TB, flags ...string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "airlock")
	if err := build(root, p, flags...); err != nil {
		t.Fatal(err)
	}
	return p
}

func build(root, out string, flags ...string) error {
	args := append(append([]string{"build"}, flags...), "-o", out, "./cmd/airlock")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s failed in %s: %v\n%s", strings.Join(args, " "), root, err, b)
	}
	return nil
}

// modulePath is the module whose ./cmd/airlock the tests build.
const modulePath = "github.com/airlockdev/airlock"

// moduleRoot asks the go command where the airlock module is, so a test
// package may sit at any depth, and in a test module of its own that
// requires airlock through a replace directive (internal/review/browsertest):
// there `go env GOMOD` names the test module, and this names ../../.., where
// ./cmd/airlock is.
func moduleRoot() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", modulePath)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s (run inside the airlock module, or a module that requires it): %v\n%s", modulePath, err, stderr.String())
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s names no directory: the airlock source is not here (a test module must replace it with a local path)", modulePath)
	}
	return dir, nil
}
