package testbin

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// waitFile watches path's directory with inotify for a name that appears
// (created, linked, moved in) and looks again after each event.
func waitFile(path string, deadline time.Time, stop <-chan struct{}) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return pollFile(path, deadline, stop)
	}
	// Non-blocking, the descriptor is served by the runtime's poller:
	// a read deadline bounds the wait, and stop moves it to now.
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR); err != nil {
		return err
	}
	if err := f.SetReadDeadline(deadline); err != nil {
		return pollFile(path, deadline, stop)
	}
	stopped := make(chan struct{})
	if stop != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-stop:
				close(stopped)
				f.SetReadDeadline(time.Now())
			case <-done:
			}
		}()
	}
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		// The watch is in place before this look: a file made since the
		// caller's look is either seen here or reported as an event.
		if Exists(path) {
			return nil
		}
		if _, err := f.Read(buf); err != nil {
			if Exists(path) {
				return nil
			}
			select {
			case <-stopped:
				return ErrStopped
			default:
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return os.ErrDeadlineExceeded
			}
			return err
		}
	}
}
