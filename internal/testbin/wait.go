package testbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ErrStopped is WaitFile's error when stop was closed first.
var ErrStopped = errors.New("stopped before the file appeared")

// WaitFile waits until something (a dangling symlink too) is at path, for
// at most timeout, or until stop is closed (nil: never). It is the other
// side of a readiness handshake: a pause point's <dir>/reached, a helper
// process's "ready" file. path's directory must exist.
//
// It wakes on the directory's own events where the system has them
// (inotify), so that it sees the file at once however busy the machine
// is, and costs nothing while it waits; timeout is only the bound past
// which the other side is taken to be stuck.
func WaitFile(path string, timeout time.Duration, stop <-chan struct{}) error {
	if Exists(path) {
		return nil
	}
	if err := waitFile(path, time.Now().Add(timeout), stop); err != nil {
		return fmt.Errorf("wait for %s: %w", path, err)
	}
	return nil
}

// pollFile is waitFile where the directory cannot be watched: it looks
// every few milliseconds.
func pollFile(path string, deadline time.Time, stop <-chan struct{}) error {
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		return err
	}
	for !Exists(path) {
		if time.Now().After(deadline) {
			return os.ErrDeadlineExceeded
		}
		select {
		case <-stop:
			if Exists(path) {
				return nil
			}
			return ErrStopped
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
