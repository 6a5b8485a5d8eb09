package airlock

import (
	"os"
	"testing"

	"github.com/airlockdev/airlock/internal/launch"
)

// TestMain lets the test binary act as the launcher's helper, as airlock's
// main does (launch.Init), so that the runs these tests make contain their
// commands where this machine can, as airlock's do: only a contained run's
// tree is pooled.
func TestMain(m *testing.M) {
	launch.Init()
	os.Exit(m.Run())
}
