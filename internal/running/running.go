package running

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	lockFile  = "lock"
	quietFile = "quiet"
	// An entry is cmdPrefix (a command running now, held locked) or
	// uncontainedPrefix (a command that ran without a PID namespace in
	// the boot the file names) and random hex.
	cmdPrefix         = "cmd-"
	uncontainedPrefix = "uncontained-"

	// lockWait bounds how long a look waits for the registry's lock: the
	// lock is held for a look at a few files, and a look that does not get
	// it in time answers "not quiet".
	lockWait = 5 * time.Second
)

// Registry is the registry of the contained commands running under one
// state root, in its directory (which it creates, 0700, when it first
// registers a command).
type Registry struct{ dir string }

// New is the registry in dir (the state root's "running").
func New(dir string) *Registry { return &Registry{dir: dir} }

// Dir is the registry's directory.
func (r *Registry) Dir() string { return r.dir }

// Entry is one registered command: running until Done.
type Entry struct {
	reg  *Registry
	path string
	f    *os.File
}

// Start registers a command about to start; it is running until Done.
// what names it (a transaction id) for whoever reads the directory.
func (r *Registry) Start(what string) (*Entry, error) {
	if err := os.Mkdir(r.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create the registry of running commands %s: %w", r.dir, err)
	}
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	path := filepath.Join(r.dir, cmdPrefix+random())
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("register a running command in %s: %w", r.dir, err)
	}
	// Locked before the registry's lock is let go: no look sees the file
	// unlocked (a crash's) while its command runs.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	fmt.Fprintf(f, "%s pid %d\n", what, os.Getpid())
	return &Entry{reg: r, path: path, f: f}, nil
}

// Uncontained marks that the command ran without a PID namespace: the
// registry is not quiet again in this boot. Call it before Done, so that
// no look finds the registry quiet in between.
func (e *Entry) Uncontained() error {
	boot, err := bootID()
	if err != nil {
		// A mark with no boot counts in every boot: fail closed.
		boot = ""
	}
	path := filepath.Join(e.reg.dir, uncontainedPrefix+random())
	return writeRenamed(path, []byte(boot+"\n"))
}

// Done releases the entry once every process of the command has ended,
// and records a quiet moment if none is left running.
func (e *Entry) Done() {
	unlock, err := e.reg.lock()
	os.Remove(e.path)
	e.f.Close()
	if err != nil {
		return
	}
	defer unlock()
	if q, err := e.reg.quiet(); err == nil && q {
		e.reg.advance()
	}
}

// Mark is the quiet generation now: a later look that finds nothing
// running moves it on.
func (r *Registry) Mark() (uint64, error) {
	unlock, err := r.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	return r.generation()
}

// QuietSince reports whether the registry was quiet (no command running)
// at some moment after Mark returned mark: nothing is running now (and the
// moment is recorded), or a look since found nothing running. Any error
// answers false.
func (r *Registry) QuietSince(mark uint64) bool {
	unlock, err := r.lock()
	if err != nil {
		return false
	}
	defer unlock()
	q, err := r.quiet()
	if err != nil {
		return false
	}
	if q {
		// Now is such a moment, whether or not it can be recorded.
		r.advance()
		return true
	}
	g, err := r.generation()
	return err == nil && g > mark
}

// UncontainedThisBoot reports whether a command ran uncontained in this
// boot (Entry.Uncontained): the registry is not quiet again before the
// machine restarts. It only looks, and takes no lock.
func (r *Registry) UncontainedThisBoot() bool {
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return false
	}
	now, _ := bootID()
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), uncontainedPrefix) || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(r.dir, e.Name()))
		if err != nil || now == "" || strings.TrimSpace(string(data)) == now || strings.TrimSpace(string(data)) == "" {
			return true
		}
	}
	return false
}

// lock takes the registry's lock, waiting up to lockWait.
func (r *Registry) lock() (func(), error) {
	path := filepath.Join(r.dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the registry lock %s: %w", path, err)
	}
	deadline := time.Now().Add(lockWait)
	for delay := time.Millisecond; ; {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock the registry %s: %w", path, err)
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// quiet looks, under the registry's lock, for a command running: an entry
// whose lock is held, or an uncontained mark of this boot. An entry whose
// airlock died (its lock is free) is removed, and the look does not count
// as quiet: the kernel releases the lock as the process exits, a moment
// before its namespace's processes are killed. A name airlock does not
// write counts as running.
func (r *Registry) quiet() (bool, error) {
	ents, err := os.ReadDir(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	q := true
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(r.dir, name)
		switch {
		case name == lockFile || name == quietFile || strings.HasSuffix(name, ".tmp"):
		case strings.HasPrefix(name, cmdPrefix):
			held, err := heldOrRemove(path)
			if err != nil || held {
				return false, err
			}
			q = false // a crash's, just removed
		case strings.HasPrefix(name, uncontainedPrefix):
			data, err := os.ReadFile(path)
			if err != nil {
				return false, err
			}
			marked := strings.TrimSpace(string(data))
			if now, err := bootID(); err == nil && now != "" && marked != "" && marked != now {
				// Marked in an earlier boot: what that run left running
				// is gone.
				os.Remove(path)
				continue
			}
			return false, nil
		default:
			return false, nil
		}
	}
	return q, nil
}

// heldOrRemove reports whether the entry at path is held (its command
// runs); one that is not is removed. An entry removed meanwhile (its
// command ended) is not held.
func heldOrRemove(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, os.Remove(path)
}

// generation reads the quiet generation: 0 before the first quiet look.
func (r *Registry) generation() (uint64, error) {
	data, err := os.ReadFile(filepath.Join(r.dir, quietFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	g, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the quiet generation %s: %w", filepath.Join(r.dir, quietFile), err)
	}
	return g, nil
}

// advance records a quiet moment: the generation moves on. (A power loss
// may lose it: a later look records another, and a generation that reads
// lower than a mark only ever answers "not quiet".)
func (r *Registry) advance() {
	g, err := r.generation()
	if err != nil {
		return
	}
	writeRenamed(filepath.Join(r.dir, quietFile), []byte(strconv.FormatUint(g+1, 10)+"\n"))
}

// writeRenamed writes path whole, by a rename over it.
func writeRenamed(path string, data []byte) error {
	tmp := path + "." + random() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func random() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Running reports whether a command registered for what (a transaction
// id, as Start was given) runs now: an entry naming it whose lock is held.
// Start writes the name under the registry's lock, so a look under it
// never reads an entry half written.
func (r *Registry) Running(what string) (bool, error) {
	ents, err := os.ReadDir(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	unlock, err := r.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), cmdPrefix) {
			continue
		}
		path := filepath.Join(r.dir, e.Name())
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		name, _, _ := strings.Cut(string(data), " pid ")
		if name != what {
			continue
		}
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, err
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return true, nil
		}
	}
	return false, nil
}
