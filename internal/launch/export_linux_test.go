package launch

import "time"

// SetLeftoverGrace shortens the grace the processes a contained command
// left running get before SIGKILL, and returns the undo.
func SetLeftoverGrace(d time.Duration) func() {
	old := leftoverGrace
	leftoverGrace = d
	return func() { leftoverGrace = old }
}
