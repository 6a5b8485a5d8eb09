package safefs

import "testing"

// forEachResolver runs f once with openat2 and fchmodat2 and once as on a
// kernel without them, so that both resolution paths are tested here.
func forEachResolver(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, old := range []bool{false, true} {
		name := "openat2"
		if old {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			simulateOldKernel = old
			t.Cleanup(func() { simulateOldKernel = false })
			f(t)
		})
	}
}
