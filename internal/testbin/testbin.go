// Package testbin builds the airlock binary once for a test package that
// drives it as a user would (real processes, real directories), so that
// every such package runs the very program users run.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Main builds ./cmd/airlock into a temporary directory, stores its path in
// *bin, runs the tests and removes the binary. Call it from TestMain:
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
	build := exec.Command("go", "build", "-o", *bin, "./cmd/airlock")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "testbin: go build ./cmd/airlock failed: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// moduleRoot asks the go command where go.mod is, so a test package may sit
// at any depth.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the airlock module (go env GOMOD is %q)", mod)
	}
	return filepath.Dir(mod), nil
}
