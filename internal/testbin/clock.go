package testbin

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// PastWindow returns once the file system holding dir stamps changes more
// than windowNs later than the ctime of every path given: a measurement
// taken after it proves, by stat alone, that those paths were not changed
// since (fsclock.Clock.Proves with that clock's WindowNs). Tests that
// write a base and then need airlock to trust its stat facts wait here on
// the file system's own clock, however busy the machine.
func PastWindow(t testing.TB, dir string, windowNs int64, paths ...string) {
	t.Helper()
	var newest int64
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatalf("PastWindow: %v", err)
		}
		newest = max(newest, st.Ctim.Nano())
	}
	f, err := os.CreateTemp(dir, ".window-*")
	if err != nil {
		t.Fatalf("PastWindow: %v", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := f.WriteAt([]byte{0}, 0); err != nil {
			t.Fatalf("PastWindow: %v", err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatalf("PastWindow: %v", err)
		}
		if st.Ctim.Nano() > newest+windowNs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("PastWindow: the file system of %s did not stamp past %d+%d ns for a minute", dir, newest, windowNs)
		}
		time.Sleep(time.Millisecond) // paces the probe; the stamp decides
	}
}
