package fanout

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Min is the fewest steps worth running on more than one goroutine: below
// it, a loop runs in order on the caller's.
const Min = 64

// maxWorkers bounds the goroutines of one loop: beyond a few, steps that
// create files in the same directories wait for each other's locks.
const maxWorkers = 4

// Each calls fn(i) for every i in [0, n), on up to min(GOMAXPROCS, 4)
// goroutines when n is at least Min, else in order on the caller's. fn
// must be safe to call concurrently for different i. It returns the error
// of the lowest index that failed, after every step already handed out
// has returned.
func Each(n int, fn func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), maxWorkers)
	if n < Min || workers < 2 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next    atomic.Int64
		stop    atomic.Bool
		mu      sync.Mutex
		first   = n
		firstEr error
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if i < first {
						first, firstEr = i, err
					}
					mu.Unlock()
					stop.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstEr
}
