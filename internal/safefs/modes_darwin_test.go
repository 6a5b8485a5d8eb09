package safefs

import "testing"

// forEachResolver runs f once: macOS has only the component walk.
func forEachResolver(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	t.Run("walk", f)
}
