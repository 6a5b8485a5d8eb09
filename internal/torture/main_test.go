package torture

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

var soakFlag = flag.Int("torture.n", 0, "multiply iterations and sizes by `N` (soak mode); AIRLOCK_TORTURE=N does the same")

// bin is the airlock binary every test drives; TestMain builds it once.
var bin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &bin)) }

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
