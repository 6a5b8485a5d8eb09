package mcpserver

import (
	"os"
	"testing"

	"github.com/airlockdev/airlock/internal/launch"
)

// TestMain lets the test binary act as the launcher's helper, as
// airlock's main does, so that the run tool's commands are contained and
// see the base's path here as they do under `airlock mcp`.
func TestMain(m *testing.M) {
	launch.Init()
	os.Exit(m.Run())
}
