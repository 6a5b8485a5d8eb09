package fanout

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

// TestEachRunsEveryStepOnce: every index is run exactly once, in order
// below Min and on several goroutines above it.
func TestEachRunsEveryStepOnce(t *testing.T) {
	for _, n := range []int{0, 1, Min - 1, Min, 10 * Min} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			runs := make([]atomic.Int32, n)
			if err := Each(n, func(i int) error { runs[i].Add(1); return nil }); err != nil {
				t.Fatal(err)
			}
			for i := range runs {
				if got := runs[i].Load(); got != 1 {
					t.Fatalf("step %d ran %d times", i, got)
				}
			}
		})
	}
}

// TestEachReportsTheFirstFailure: with several steps failing, the error
// is the lowest index's, as a loop in order would stop at, and every step
// below it ran.
func TestEachReportsTheFirstFailure(t *testing.T) {
	for _, n := range []int{Min - 1, 10 * Min} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			fail := map[int]bool{n / 3: true, n / 2: true, n - 1: true}
			ran := make([]atomic.Bool, n)
			err := Each(n, func(i int) error {
				ran[i].Store(true)
				if fail[i] {
					return fmt.Errorf("step %d: %w", i, errBoom)
				}
				return nil
			})
			if want := fmt.Sprintf("step %d: boom", n/3); err == nil || err.Error() != want {
				t.Fatalf("Each = %v, want %s", err, want)
			}
			for i := range n / 3 {
				if !ran[i].Load() {
					t.Fatalf("step %d, below the first failure, did not run", i)
				}
			}
		})
	}
}

var errBoom = errors.New("boom")
