package watch

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// events is every change to a watched directory's entries, and to the
// directory itself, that a write of the tree can make, and every open of
// one: a write through a shared mapping makes no event of its own, and
// the close that would name it can come after the command (its last
// descriptor held by another process, or in flight in a unix socket the
// kernel collects later). Every file a command could write was opened,
// so an open names it; what an open names that was only read measures
// the same again.
const events = unix.IN_OPEN | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// Watch is the watch of one tree, from Start to Stop.
type Watch struct {
	root string
	fd   int
	wake [2]int // a pipe: Stop writes to it to end the reader's poll
	dirs map[int32]string

	mu      sync.Mutex
	changes Changes
	err     error // why the names cannot be trusted; the first one wins
	done    chan struct{}
}

// Changes is what a watch saw: the tree paths (slash-separated, relative
// to the root, "" for the root) whose entries may have changed, and the
// subtrees to measure whole (a directory made, moved in or out, or
// deleted: nothing watched its entries).
type Changes struct {
	Paths map[string]bool
	Trees map[string]bool
}

// Start watches root and every directory in dirs (paths relative to root,
// slash-separated: the directories of the tree's manifest, as measured
// before the command starts). Nothing is watched on an error: the caller
// walks.
func Start(root string, dirs []string) (_ *Watch, err error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	w := &Watch{root: root, fd: fd, dirs: make(map[int32]string, len(dirs)+1), done: make(chan struct{}),
		changes: Changes{Paths: map[string]bool{}, Trees: map[string]bool{}}}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	// IN_ONLYDIR and IN_DONT_FOLLOW: a directory swapped for a link or a
	// file since it was measured fails the watch, never watches elsewhere.
	// IN_EXCL_UNLINK: a file's writes after its last name is gone change
	// no tree path.
	mask := uint32(events | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK)
	for _, d := range append([]string{""}, dirs...) {
		p := filepath.Join(root, filepath.FromSlash(d))
		wd, err := unix.InotifyAddWatch(fd, p, mask)
		if err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return nil, fmt.Errorf("watch %s: the user's inotify watch limit (fs.inotify.max_user_watches) is reached", p)
			}
			return nil, fmt.Errorf("watch %s: %w", p, err)
		}
		if prev, dup := w.dirs[int32(wd)]; dup {
			// Two tree paths, one directory: a bind mount inside the
			// tree. Its events could not say which path they are under.
			return nil, fmt.Errorf("watch %s: it is the directory %s too", p, filepath.Join(root, prev))
		}
		w.dirs[int32(wd)] = d
	}
	if err := unix.Pipe2(w.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	go w.read()
	return w, nil
}

// Resume goes on with a watch another process kept (Hand, then the state
// root's daemon): fd is its inotify instance, now this Watch's, and dirs
// the directory (relative to root) of each of its watch descriptors. What
// was queued on it and not yet read is read as this watch's own, so that
// the watch is continuous from when it was first set. fd is closed on an
// error.
func Resume(root string, fd int, dirs map[int32]string) (*Watch, error) {
	w := &Watch{root: root, fd: fd, dirs: dirs, done: make(chan struct{}),
		changes: Changes{Paths: map[string]bool{}, Trees: map[string]bool{}}}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	if err := unix.Pipe2(w.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	go w.read()
	return w, nil
}

// read takes the events off the queue while the command runs, so that a
// command writing many files does not overflow it, until Stop.
func (w *Watch) read() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wake[0]), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err != nil && err != unix.EINTR {
			w.fail(fmt.Errorf("poll the watch of %s: %w", w.root, err))
			return
		}
		if !w.drain(buf) || fds[1].Revents != 0 {
			return
		}
	}
}

// drain reads every queued event, and reports whether reading may go on.
func (w *Watch) drain(buf []byte) bool {
	for {
		n, err := unix.Read(w.fd, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true
		case err != nil:
			w.fail(fmt.Errorf("read the watch of %s: %w", w.root, err))
			return false
		}
		w.parse(buf[:n])
	}
}

// parse records one read's events.
func (w *Watch) parse(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			w.failLocked(errors.New("a torn inotify event"))
			return
		}
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		b = b[end:]
		w.event(ev.Wd, ev.Mask, name)
	}
}

// event records one event; w.mu is held.
func (w *Watch) event(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.failLocked(fmt.Errorf("the kernel's queue of events for %s overflowed (fs.inotify.max_queued_events)", w.root))
		return
	}
	if mask&unix.IN_UNMOUNT != 0 {
		w.failLocked(fmt.Errorf("a file system under %s was unmounted", w.root))
		return
	}
	dir, ok := w.dirs[wd]
	if !ok {
		if mask&unix.IN_IGNORED != 0 {
			return
		}
		w.failLocked(fmt.Errorf("an event for an unknown watch %d under %s", wd, w.root))
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		// The directory is gone (or moved out of reach): its parent's
		// event names it, and its entries go with it.
		return
	}
	if name == "" {
		// The directory itself: its own stat changed, it was deleted, or
		// it moved (the parent's events name both ends of a move).
		if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
			w.changes.Trees[dir] = true
		} else {
			w.changes.Paths[dir] = true
		}
		return
	}
	p := name
	if dir != "" {
		p = dir + "/" + name
	}
	if mask&(unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
		// A change of the listing moves the directory's own times,
		// which no event of its own reports.
		w.changes.Paths[dir] = true
	}
	if mask&unix.IN_ISDIR != 0 && mask&(unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
		w.changes.Trees[p] = true
		return
	}
	w.changes.Paths[p] = true
}

func (w *Watch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failLocked(err)
}

func (w *Watch) failLocked(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Stop ends the watch and returns what it saw. Call it once every process
// that could write the tree has ended: the kernel queues an event as the
// system call makes its change, so what is queued then is everything.
// An error means the names cannot be trusted and the tree must be walked.
func (w *Watch) Stop() (*Changes, error) {
	ch, err := w.Pause()
	w.Close()
	return ch, err
}

// Pause is Stop that keeps watching: the events after it stay queued on
// the watch's inotify instance, for whoever Hand gives it to, until
// Close.
func (w *Watch) Pause() (*Changes, error) {
	unix.Write(w.wake[1], []byte{0})
	<-w.done
	w.drain(make([]byte, 64<<10))
	unix.Close(w.wake[0])
	unix.Close(w.wake[1])
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, w.err
	}
	return &w.changes, nil
}

// Hand returns, after Pause, the watch's inotify instance and the
// directory (relative to the root) of each of its watch descriptors, for
// another process to read on from where Pause left (internal/watchd). The
// descriptor stays the Watch's to close.
func (w *Watch) Hand() (fd int, dirs map[int32]string) { return w.fd, w.dirs }

// Close closes the inotify instance after Pause; again, nothing. It
// returns at once and closes in the background: the close waits for the
// kernel to free the watches (an SRCU grace period, 5 to 20 ms here, as
// long as a small run's whole settling), which nobody need wait for, since
// nothing the instance could report after the drain concerns anyone.
func (w *Watch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		go unix.Close(w.fd)
		w.fd = -1
	}
}
