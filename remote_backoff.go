package airlock

import (
	"context"
	"math/rand/v2"
	"time"
)

// Between two attempts of a landing into a remote that found the branch
// moved, the landing waits: hosts that lost the same race would otherwise
// fetch, validate and push again in step, and lose to each other again.
// The wait doubles from remoteBackoffBase per lost race up to
// remoteBackoffMax, and is drawn from its upper half ("equal jitter"):
// never less than half of it, so a run of lost races backs off for sure,
// and never more than remoteBackoffMax, so a landing's total wait is
// bounded by its attempts.
const (
	remoteBackoffBase = 250 * time.Millisecond
	remoteBackoffMax  = 4 * time.Second
)

// defaultJitter is the backoff's randomness when the caller gives none; a
// build with the tag airlock_faults lets a test fix it
// (remote_backoff_faults.go).
var defaultJitter = rand.Float64

// backoffDelay is the wait after the lost-th race (1 for the first),
// drawn with jitter, a number in [0, 1).
func backoffDelay(lost int, jitter func() float64) time.Duration {
	d := remoteBackoffMax
	if lost >= 1 && lost < 16 {
		d = min(remoteBackoffBase<<(lost-1), remoteBackoffMax)
	}
	j := jitter()
	if j < 0 || j >= 1 {
		// A caller's source that strays out of range must not stretch
		// the bound.
		j = 0
	}
	return d/2 + time.Duration(j*float64(d/2))
}

// remoteBackoff waits after the lost-th race, recording the wait as the
// remote_backoff event of each transaction that waits; a context that
// ends stops it.
func remoteBackoff(ctx context.Context, lost int, jitter func() float64, txs ...*Tx) error {
	if jitter == nil {
		jitter = defaultJitter
	}
	d := backoffDelay(lost, jitter)
	for _, t := range txs {
		t.event("remote_backoff", map[string]any{"after_attempt": lost, "wait_ms": d.Milliseconds()})
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return txs[0].cancelled(ctx)
	}
}
