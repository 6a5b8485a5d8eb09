package airlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/pool"
	"github.com/airlockdev/airlock/internal/state"
)

// ExecOptions says how Tx.Exec runs a command in a transaction's staged
// workspace.
type ExecOptions struct {
	// Argv is the command and its arguments; Argv[0] is looked up like a
	// shell would, against the PATH in Env.
	Argv []string
	// Dir is the directory the command starts in, slash-separated and
	// relative to the workspace's root; "" is the root.
	Dir string
	// Env is the command's environment; nil means this process's own.
	// Exec adds AIRLOCK_TX and AIRLOCK_PORT_BASE to it.
	Env []string
	// SamePath asks that the command see the staged workspace at the
	// base's own path, as RunOptions.SamePath.
	SamePath bool
	// Stdin is the command's input; nil connects the null device.
	Stdin io.Reader
	// Timeout, when positive, ends the command (SIGTERM, then SIGKILL)
	// once it has run that long.
	Timeout time.Duration
	// OutputLimit is how many bytes of each of stdout and stderr Exec
	// keeps (its first and last halves); 0 means DefaultOutputLimit.
	OutputLimit int
}

// DefaultOutputLimit is how much of each output stream Exec keeps unless
// told otherwise.
const DefaultOutputLimit = 32 << 10

// ExecResult is how a command run by Tx.Exec ended.
type ExecResult struct {
	// ExitCode is the command's exit code, as RunResult.ExitCode: 128+N
	// after death by signal N, 127 when it was not found, 126 when it
	// could not be executed.
	ExitCode int
	// Signal, when not zero, is the signal that killed the command.
	Signal syscall.Signal
	// TimedOut says the command ran past ExecOptions.Timeout and was ended.
	TimedOut bool
	// Stdout and Stderr are what the command wrote, each cut to the
	// output limit: its first half and its last, the bytes between
	// dropped and counted in StdoutCut and StderrCut.
	Stdout, Stderr       []byte
	StdoutCut, StderrCut int64
	// SamePath and Fallback, Contained and Uncontained, and Ended are as
	// in RunResult.
	SamePath    bool
	Fallback    string
	Contained   bool
	Uncontained string
	Ended       []string
	Duration    time.Duration
}

// NotOpenError is the error Exec returns for a transaction whose staged
// workspace is not open to work in: one that has settled (committed,
// discarded, closed with no changes) or whose apply was interrupted.
type NotOpenError struct {
	Tx     string
	Status Status
}

func (e *NotOpenError) Error() string {
	if e.Status == StatusInterrupted {
		return fmt.Sprintf("transaction %s: its commit was interrupted mid-apply; nothing runs in it until it is recovered", e.Tx)
	}
	return fmt.Sprintf("transaction %s is %s: its staged workspace is no longer open, and nothing runs in it", e.Tx, e.Status)
}

// Exec runs a command in the transaction's staged workspace and returns
// how it ended, without settling the transaction: an agent builds and
// tests in the workspace, then commits or discards. The command is
// launched as Run launches one: contained where a PID namespace can be
// had (whatever it leaves running is ended before Exec returns),
// registered among the running commands for its whole life (so that no
// pooled tree it could hold is reused while it runs), with the state root
// read-only to it.
//
// A command that exits non-zero, is killed, times out or cannot be
// started is a result, not an error: the error is for a transaction that
// is not open (*NotOpenError), bad options, and a command whose end could
// not be observed. Cancelling ctx ends the command and returns an error.
func (t *Tx) Exec(ctx context.Context, o ExecOptions) (_ *ExecResult, err error) {
	defer exported(&err)
	if len(o.Argv) == 0 || o.Argv[0] == "" {
		return nil, fmt.Errorf("transaction %s: exec: no command given", t.ID())
	}
	if c := path.Clean(o.Dir); o.Dir != "" && (path.IsAbs(o.Dir) || c == ".." || len(c) > 2 && c[:3] == "../") {
		return nil, fmt.Errorf("transaction %s: exec %s: start directory %q is not a relative path inside the staged workspace", t.ID(), o.Argv[0], o.Dir)
	}
	if o.Timeout < 0 || o.OutputLimit < 0 {
		return nil, fmt.Errorf("transaction %s: exec %s: a negative timeout (%v) or output limit (%d)", t.ID(), o.Argv[0], o.Timeout, o.OutputLimit)
	}
	// The transaction's settle lock, held for the command's whole life: a
	// commit or discard (of this process or another) never settles the
	// workspace under a command still writing it, and a command never
	// starts in one a commit has checked. A commit that finds the lock
	// held by a command refuses at once (settleLock); one that holds it
	// makes Exec refuse.
	unlock, err := t.st.TryLock()
	if errors.Is(err, state.ErrLocked) {
		return nil, &BusyError{Tx: t.ID()}
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := t.Status()
	if err != nil {
		return nil, err
	}
	if st != StatusOpen && st != StatusRefused {
		return nil, &NotOpenError{Tx: t.ID(), Status: st}
	}
	if err := t.startDir(o.Dir); err != nil {
		return nil, fmt.Errorf("transaction %s: exec %s: %w", t.ID(), o.Argv[0], err)
	}
	marker, err := t.markExec()
	if err != nil {
		return nil, err
	}
	defer marker()
	spec, err := t.launchSpec(o.Argv, o.Dir, o.Env, o.SamePath)
	if err != nil {
		return nil, err
	}
	limit := o.OutputLimit
	if limit == 0 {
		limit = DefaultOutputLimit
	}
	stdout, stderr := newClipped(limit), newClipped(limit)
	spec.Stdin, spec.Stdout, spec.Stderr = o.Stdin, stdout, stderr
	// The command's streams are its own: a model reads them, the user's
	// terminal never sees them, and so SIGINT and SIGTERM reach its whole
	// group at once and what it leaves in that group ends with it.
	spec.EndGroup = true

	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if o.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, o.Timeout)
	}
	defer cancel()
	started := time.Now()
	lr, registered, runErr := t.store.launchRegistered(runCtx, t.ID(), spec)
	if acc := pool.Account(lr); !acc.Contained || !registered {
		t.execUnaccounted = true
	}
	res := &ExecResult{ExitCode: lr.ExitCode, Signal: lr.Signal,
		TimedOut: ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded),
		Stdout:   stdout.bytes(), Stderr: stderr.bytes(), StdoutCut: stdout.cut, StderrCut: stderr.cut,
		SamePath: lr.SamePath, Fallback: lr.Fallback, Contained: lr.Contained, Uncontained: lr.Uncontained,
		Ended: lr.Ended, Duration: time.Since(started)}
	var execErr *launch.ExecError
	switch {
	case runErr == nil:
		return res, nil
	case res.TimedOut:
		// Ended for its timeout: by SIGTERM, or by SIGKILL after it
		// ignored that, either way a result, with what it wrote.
		// A command that outlived the grace after SIGTERM was killed:
		// its end is SIGKILL's, though its own exit status was the
		// helper's to see.
		if res.ExitCode < 0 {
			if res.Signal == 0 {
				res.Signal = syscall.SIGKILL
			}
			res.ExitCode = 128 + int(res.Signal)
		}
		return res, nil
	case errors.As(runErr, &execErr):
		// Not found or not executable: the shell's 127 or 126, and why.
		res.Stderr = append(res.Stderr, runErr.Error()+"\n"...)
		return res, nil
	}
	return res, fmt.Errorf("transaction %s: exec %s: %w", t.ID(), o.Argv[0], runErr)
}

// BusyError is the error Exec returns for a transaction another process
// is settling right now (a commit, discard or recover holds its lock),
// and the one a commit or discard returns while Exec runs a command in it:
// neither waits for the other, and nothing was run, committed or
// discarded.
type BusyError struct {
	Tx string
	// Exec says a command run by Exec holds the transaction; else a
	// settle does.
	Exec bool
}

func (e *BusyError) Error() string {
	if e.Exec {
		return fmt.Sprintf("transaction %s has a command running in its staged workspace (Exec: the MCP run tool): nothing was settled; commit or discard it once the command has ended", e.Tx)
	}
	return fmt.Sprintf("transaction %s is being settled by another airlock process (a commit, discard or recover holds it): nothing was run; if it was committed or discarded, open a new transaction", e.Tx)
}

// execMarker is the file in a transaction's state that says its lock is
// held by a command Exec runs, not by a settle.
const execMarker = "exec"

// markExec notes, while the lock is held, that Exec holds it; the
// returned func removes the note. A note left by a process that died
// means nothing once its lock is free: it is read only when the lock is
// held.
func (t *Tx) markExec() (func(), error) {
	p := t.st.Path(execMarker)
	if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("transaction %s: note the command it runs: %w", t.ID(), err)
	}
	return func() { os.Remove(p) }, nil
}

// settleLock takes the transaction's lock for a commit or discard. Held
// by another settle, it waits, as a second commit of one transaction
// always has; held by a command Exec runs, it refuses at once
// (*BusyError), since that command may run for an hour.
func (t *Tx) settleLock(ctx context.Context) (func(), error) {
	unlock, err := t.st.TryLock()
	if err == nil || !errors.Is(err, state.ErrLocked) {
		return unlock, err
	}
	if _, serr := os.Lstat(t.st.Path(execMarker)); serr == nil {
		return nil, &BusyError{Tx: t.ID(), Exec: true}
	}
	return t.st.Lock(ctx)
}

// startDir checks Exec's start directory: every component of it a
// directory of the staged workspace, none a symlink (one could name a
// directory outside it, where the command would start and the result say
// it had not).
func (t *Tx) startDir(dir string) error {
	if dir == "" || path.Clean(dir) == "." {
		return nil
	}
	rel := ""
	for _, c := range strings.Split(path.Clean(dir), "/") {
		rel = path.Join(rel, c)
		fi, err := os.Lstat(filepath.Join(t.Path(), filepath.FromSlash(rel)))
		switch {
		case err != nil:
			return fmt.Errorf("start directory %q: %w", dir, err)
		case fi.Mode()&os.ModeSymlink != 0:
			return fmt.Errorf("start directory %q: %s is a symlink in the staged workspace; name the directory it points to, inside the workspace", dir, rel)
		case !fi.IsDir():
			return fmt.Errorf("start directory %q: %s is not a directory", dir, rel)
		}
	}
	return nil
}

// clipped keeps the first and last halves of what is written to it, up
// to limit bytes in all, and counts what it drops between them: a build's
// first error and a test run's summary both survive a long output.
type clipped struct {
	limit      int
	head, tail []byte
	cut        int64
}

func newClipped(limit int) *clipped { return &clipped{limit: limit} }

func (c *clipped) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.limit/2 + c.limit%2 - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	keep := c.limit / 2
	if len(p) >= keep {
		c.cut += int64(len(c.tail) + len(p) - keep)
		c.tail = append(c.tail[:0], p[len(p)-keep:]...)
		return n, nil
	}
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - keep; over > 0 {
		c.cut += int64(over)
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return n, nil
}

// bytes is what was kept: the whole output when nothing was dropped.
func (c *clipped) bytes() []byte {
	out := append([]byte(nil), c.head...)
	return append(out, c.tail...)
}
