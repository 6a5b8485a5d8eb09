package stage

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
)

// testClock is the timestamp clock of the file system the tests' trees
// are on (the temporary directory's), as airlock would measure it.
var testClock = sync.OnceValues(func() (fsclock.Clock, error) { return fsclock.Measure(os.TempDir()) })

// tclock is testClock, or the test fails.
func tclock(t *testing.T) fsclock.Clock {
	t.Helper()
	c, err := testClock()
	must(t, err)
	return c
}

// clocked gives req the clocks of the tests' file system.
func clocked(req Request) Request {
	c, err := testClock()
	if err != nil {
		panic(err)
	}
	req.StateClock, req.BaseClock = c, c
	return req
}

// waitProven waits until the tests' clock proves the stat of every entry
// of dir: until its window has passed since the newest ctime there.
func waitProven(t *testing.T, dir string) {
	t.Helper()
	c := tclock(t)
	m, err := manifest.Walk(t.Context(), dir, manifest.WalkOptions{})
	must(t, err)
	var newest int64
	for _, e := range m.Entries {
		newest = max(newest, e.CtimeNs)
	}
	for !c.Proves(newest, time.Now().UnixNano()) {
		time.Sleep(time.Duration(c.WindowNs()) / 4)
	}
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
