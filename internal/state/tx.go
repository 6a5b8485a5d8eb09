package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/safefs"
)

// EventsFile is the name of a transaction's append-only event log.
const EventsFile = "events.jsonl"

// Tx is the state directory of one transaction.
type Tx struct {
	id  string
	dir string
}

// Event is one line of a transaction's event log.
type Event struct {
	Time   time.Time      `json:"time"`
	Event  string         `json:"event"`
	Detail map[string]any `json:"detail,omitempty"`
}

// ID is the transaction id.
func (t *Tx) ID() string { return t.id }

// Dir is the transaction's state directory.
func (t *Tx) Dir() string { return t.dir }

// Path is the path of name inside the transaction's state directory. name
// is slash- or separator-separated and must stay inside the directory; the
// methods that take a name refuse one that does not.
func (t *Tx) Path(name string) string { return filepath.Join(t.dir, name) }

// check refuses the transaction directory unless it is a safe directory. A
// missing transaction matches fs.ErrNotExist.
func (t *Tx) check() error {
	err := checkDir(t.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("transaction %s not found (no %s): %w", t.id, t.dir, fs.ErrNotExist)
	}
	return stateErr("transaction", t.dir, err)
}

// resolve validates name and checks the transaction directory and every
// directory between it and name, so that a symlinked or foreign directory
// cannot redirect a read or write.
func (t *Tx) resolve(name string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(name))
	if !filepath.IsLocal(clean) || clean == "." {
		return "", fmt.Errorf("state file name %q in transaction %s: must be a relative path inside the transaction directory", name, t.id)
	}
	if err := t.check(); err != nil {
		return "", err
	}
	dir := t.dir
	parts := strings.Split(clean, string(filepath.Separator))
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		if err := checkDir(dir); err != nil {
			return "", stateErr("state directory", dir, err)
		}
	}
	return filepath.Join(t.dir, clean), nil
}

func encode(path string, v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode state file %s: %w", path, err)
	}
	return append(data, '\n'), nil
}

// WriteOnce durably writes v as JSON to name, which must not exist yet:
// immutable records are never overwritten. The file is fully written and
// fsync'd under a temporary name and then published with link(2), which
// fails if the name is taken, so a reader sees the whole record or none.
// A second write fails with an error matching fs.ErrExist.
func (t *Tx) WriteOnce(name string, v any) error { return t.writeOnce(name, v, true) }

// WriteOnceUnsynced is WriteOnce without the fsync of the directory: the
// record's bytes are durable, its name once the caller's next durable
// write into the same directory fsyncs it (see [Tx.WriteUnsynced]).
func (t *Tx) WriteOnceUnsynced(name string, v any) error { return t.writeOnce(name, v, false) }

func (t *Tx) writeOnce(name string, v any, syncDir bool) error {
	path, err := t.resolve(name)
	if err != nil {
		return err
	}
	data, err := encode(path, v)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := safefs.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer tmp.Cleanup()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = tmp.Link(path)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("state file %s already exists and is written only once: %w", path, fs.ErrExist)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !syncDir {
		return nil
	}
	return safefs.SyncDir(dir)
}

// Write durably and atomically replaces name with v as JSON (mode 0600).
func (t *Tx) Write(name string, v any) error {
	path, err := t.resolve(name)
	if err != nil {
		return err
	}
	data, err := encode(path, v)
	if err != nil {
		return err
	}
	return safefs.WriteFile(path, data, 0o600)
}

// WriteUnsynced is Write without the fsync of the directory: the file's
// bytes are durable before its name appears (a crash never leaves it torn),
// and its name once the caller's next durable write into the same
// directory fsyncs that directory. For state that a later record is
// ordered behind: a transaction's files written while it opens, whose
// directory the open syncs once before and once after it publishes the
// open record, rather than once for every file.
func (t *Tx) WriteUnsynced(name string, v any) error {
	path, err := t.resolve(name)
	if err != nil {
		return err
	}
	data, err := encode(path, v)
	if err != nil {
		return err
	}
	return safefs.WriteFileUnsynced(path, data, 0o600)
}

// Read decodes the JSON state file name into v after checking it. A missing
// file is an error matching fs.ErrNotExist; undecodable content is a
// *CorruptError.
func (t *Tx) Read(name string, v any) error {
	path, err := t.resolve(name)
	if err != nil {
		return err
	}
	data, err := readChecked(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty file")
		}
		return &CorruptError{Path: path, Err: err}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &CorruptError{Path: path, Err: errors.New("unexpected data after the JSON value")}
	}
	return nil
}

// Append adds ev to the event log with a single O_APPEND write and fsyncs
// it before returning. A zero Time is set to now. The append that creates
// the log also fsyncs the transaction's directory, which makes every name
// in it durable: an open relies on that for its record (see
// WriteOnceUnsynced).
func (t *Tx) Append(ev Event) error {
	path, err := t.resolve(EventsFile)
	if err != nil {
		return err
	}
	if ev.Event == "" {
		return fmt.Errorf("append to %s: event has no name", path)
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event %q for %s: %w", ev.Event, path, err)
	}
	line = append(line, '\n')
	_, statErr := os.Lstat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := openChecked(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return stateErr("append to event log", path, err)
	}
	_, err = f.Write(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to event log %s: %w", path, err)
	}
	if created {
		return safefs.SyncDir(t.dir)
	}
	return nil
}

// Events reads the event log. A missing log is empty. A line that is
// truncated (no final newline), blank or undecodable is a *CorruptError
// naming the file and line: an event log with a hole cannot be trusted.
func (t *Tx) Events() ([]Event, error) {
	path, err := t.resolve(EventsFile)
	if err != nil {
		return nil, err
	}
	data, err := readChecked(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var evs []Event
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil, &CorruptError{Path: path, Line: n, Err: errors.New("truncated line (no newline at end)")}
		}
		line := data[:i]
		data = data[i+1:]
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, &CorruptError{Path: path, Line: n, Err: err}
		}
		if ev.Event == "" || ev.Time.IsZero() {
			return nil, &CorruptError{Path: path, Line: n, Err: errors.New("event without a name or time")}
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// Remove deletes the file or subtree name inside the transaction directory
// (e.g. the staged workspace). Read-only directories inside it are made
// writable first; a mount point stops the removal, because deleting through
// a mount would delete what is mounted. A missing name is not an error.
func (t *Tx) Remove(name string) error {
	path, err := t.resolve(name)
	if err != nil {
		return err
	}
	if err := removeTree(path); err != nil {
		return err
	}
	return safefs.SyncDir(filepath.Dir(path))
}

// Lock takes the transaction's own lock (flock on its lock file), so that
// two processes settling the same transaction at once do it one after the
// other: the second then sees the first's outcome.
func (t *Tx) Lock(ctx context.Context) (unlock func(), err error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return lockFile(ctx, t.Path("lock"))
}

// TryLock takes the transaction's lock if no other process holds it, and
// otherwise fails at once with an error matching ErrLocked: the
// transaction is being settled right now.
func (t *Tx) TryLock() (unlock func(), err error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return tryLockFile(t.Path("lock"))
}

// ReadFile reads a state file of the transaction with the same safety
// checks as Read (a regular file, owned by the user, not writable by group
// or others, no symlink on the way), for files that are not JSON.
func (t *Tx) ReadFile(name string) ([]byte, error) {
	path, err := t.resolve(name)
	if err != nil {
		return nil, err
	}
	return readChecked(path)
}
