package torture

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

var (
	soakFlag  = flag.Int("torture.n", 0, "multiply iterations and sizes by `N` (soak mode); AIRLOCK_TORTURE=N does the same")
	knownFlag = flag.Bool("torture.known", false, "also run the tests that reproduce known, unfixed bugs")
)

// bin is the airlock binary every test drives; TestMain builds it once.
var bin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err == nil {
		_, err = os.Stat(filepath.Join(root, "go.mod"))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "torture: cannot find the module root: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "airlock-torture-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "torture: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "airlock")
	build := exec.Command("go", "build", "-o", bin, "./cmd/airlock")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "torture: go build ./cmd/airlock failed: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// soak is the multiplier of the soak mode: 1 by default.
func soak() int {
	if *soakFlag > 0 {
		return *soakFlag
	}
	if v, err := strconv.Atoi(os.Getenv("AIRLOCK_TORTURE")); err == nil && v > 0 {
		return v
	}
	return 1
}

// scaled is n times the soak multiplier.
func scaled(n int) int { return n * soak() }

// knownBug skips a test that reproduces a known, unfixed bug unless
// -torture.known (or AIRLOCK_TORTURE_KNOWN=1) asks for it.
func knownBug(t *testing.T, what string) {
	t.Helper()
	if *knownFlag || os.Getenv("AIRLOCK_TORTURE_KNOWN") == "1" {
		return
	}
	t.Skipf("known bug, run with -torture.known to reproduce it: %s", what)
}
