package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock(2) on path, creating it if needed, and
// waits for it until ctx is done. flock locks belong to the open file, so
// they exclude other processes and other lockFile calls in this process
// alike, and the kernel drops them when a holder dies — a crashed commit
// never leaves a stale lock behind.
func lockFile(ctx context.Context, path string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return flockFile(ctx, path, true)
}

// tryLockFile takes the lock on path if it is free and otherwise returns
// an error matching ErrLocked at once: for gc, which must neither remove
// what a commit is working on nor wait for it.
func tryLockFile(path string) (func(), error) {
	return flockFile(context.Background(), path, false)
}

// flockFile opens and checks the lock file and takes its lock, waiting
// for it (until ctx is done) only if wait is set.
func flockFile(ctx context.Context, path string, wait bool) (func(), error) {
	// Read-only: flock needs no more, and a lock file that exists opens
	// where the state root is mounted read-only (a check made by an agent's
	// hook inside `airlock run`).
	f, err := openChecked(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, stateErr("lock", path, err)
	}
	if err := checkLock(path, f); err != nil {
		f.Close()
		return nil, err
	}
	// Polling rather than a blocking flock keeps ctx in charge: a blocked
	// flock(2) cannot be interrupted from Go without signalling the thread.
	delay := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !wait {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ErrLocked)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: still held by another airlock process: %w", path, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 50*time.Millisecond)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
			f.Close()
		})
	}, nil
}

// checkLock holds a lock file to more than the checks of any state file
// (openChecked): flock(2) needs only a descriptor open for reading, so a
// lock file that another user can read, or that has a second name
// elsewhere, is one they could hold against every airlock commit.
func checkLock(path string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("is a lock file accessible by group or others (mode %04o, want 0600), so another user could hold it", perm)}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink != 1 {
		return &UnsafeError{Path: path, Reason: fmt.Sprintf("is a lock file with %d hard links, so it can be held through another name", st.Nlink)}
	}
	return nil
}

// ErrLocked says a lock is held by someone else right now.
var ErrLocked = errors.New("held by another airlock process")
