//go:build airlock_faults

package airlock

import (
	"os"
	"strconv"
)

// AIRLOCK_TEST_JITTER=<x>, x in [0, 1), fixes the backoff's randomness
// (defaultJitter) so that a test knows each wait between attempts. It
// exists only in a build with the tag airlock_faults.
func init() {
	if v, err := strconv.ParseFloat(os.Getenv("AIRLOCK_TEST_JITTER"), 64); err == nil && v >= 0 && v < 1 {
		defaultJitter = func() float64 { return v }
	}
}
