package testbin

import (
	"os"
	"testing"
	"time"
)

// NextTick returns once the file system holding dir stamps changes later
// than any stamp it gave before the call, so that a write made after it
// moves a file's mtime and ctime visibly, whatever the file system's
// timestamp granularity (a clock tick of a few milliseconds, or a whole
// second) and however busy the machine. It waits on the file system's own
// clock, not a guess at it: it rewrites a probe file in dir until the
// probe's mtime differs from the one it was created with. dir is a
// scratch directory of the test's on that file system; the probe is
// removed again.
func NextTick(t testing.TB, dir string) {
	t.Helper()
	f, err := os.CreateTemp(dir, ".tick-*")
	if err != nil {
		t.Fatalf("NextTick: %v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	first, err := f.Stat()
	if err != nil {
		t.Fatalf("NextTick: %v", err)
	}
	// Two seconds is FAT's granularity, the coarsest there is; a minute
	// is far past any load.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := f.WriteAt([]byte{0}, 0); err != nil {
			t.Fatalf("NextTick: %v", err)
		}
		now, err := f.Stat()
		if err != nil {
			t.Fatalf("NextTick: %v", err)
		}
		if now.ModTime().After(first.ModTime()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("NextTick: the file system of %s stamped %v for a minute", dir, first.ModTime())
		}
		time.Sleep(time.Millisecond) // paces the probe; the stamp decides
	}
}
