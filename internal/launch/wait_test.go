package launch

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestUnobservableExit: when Wait cannot say how the command ended, Run
// reports an error and no exit code, so the caller discards.
func TestUnobservableExit(t *testing.T) {
	cause := errors.New("wait4: no child processes")
	res, err := waitResult(context.Background(), "agent", nil, cause)
	if !errors.Is(err, cause) || res.ExitCode != -1 {
		t.Fatalf("waitResult = %+v, %v; want exit code -1 and an error wrapping %v", res, err, cause)
	}
	if !strings.Contains(err.Error(), "agent") {
		t.Errorf("error %q does not name the command", err)
	}
}
