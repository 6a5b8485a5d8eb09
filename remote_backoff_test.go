package airlock

import (
	"testing"
	"time"
)

// The wait after the lost-th race doubles from remoteBackoffBase up to
// remoteBackoffMax and is drawn from its upper half: never under half,
// never over the bound, whatever the randomness says.
func TestBackoffDelayIsBoundedAndJittered(t *testing.T) {
	for lost := 1; lost <= 70; lost++ {
		d := remoteBackoffMax
		if lost < 16 {
			d = min(remoteBackoffBase*time.Duration(1<<(lost-1)), remoteBackoffMax)
		}
		for _, j := range []float64{0, 0.25, 0.5, 0.999999, 1, -1, 7} {
			got := backoffDelay(lost, func() float64 { return j })
			if got < d/2 || got > d {
				t.Errorf("lost %d, jitter %v: waited %v, want within [%v, %v]", lost, j, got, d/2, d)
			}
			if got > remoteBackoffMax {
				t.Errorf("lost %d, jitter %v: waited %v, over the bound %v", lost, j, got, remoteBackoffMax)
			}
		}
	}
	if a, b := backoffDelay(1, func() float64 { return 0.5 }), backoffDelay(2, func() float64 { return 0.5 }); b != 2*a {
		t.Errorf("the second wait %v is not twice the first %v", b, a)
	}
	if got := backoffDelay(1, func() float64 { return 0.5 }); got != 187500*time.Microsecond {
		t.Errorf("the first wait with jitter 0.5 is %v, want 187.5ms", got)
	}
	// Two hosts that lost the same race wait differently.
	if backoffDelay(3, func() float64 { return 0.1 }) == backoffDelay(3, func() float64 { return 0.9 }) {
		t.Errorf("the wait does not depend on the randomness")
	}
}
