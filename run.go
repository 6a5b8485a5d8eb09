package airlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/pool"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/watchd"
)

// RunOptions says how Tx.Run runs a command and settles its transaction.
type RunOptions struct {
	// Argv is the command and its arguments; Argv[0] is looked up like a
	// shell would, against the PATH in Env.
	Argv []string
	// Dir is the directory whose counterpart in the staged workspace the
	// command starts in, when it lies inside the base; elsewhere the command
	// starts at the workspace's root. "" means the current directory.
	Dir string
	// Env is the command's environment; nil means this process's own. Run
	// adds AIRLOCK_TX and AIRLOCK_PORT_BASE to it.
	Env []string
	// SamePath asks that the command see the staged workspace at the base's
	// own path (Linux, where a mount namespace can be had). Run falls back
	// to the staged path, saying why in RunResult.Fallback, where it cannot,
	// and does not ask for a transaction whose workspace cannot have it
	// (see Tx.SamePathOff).
	SamePath bool
	// Stdin, Stdout and Stderr are the command's streams; nil connects the
	// null device.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Settle is how a successful command's change set is committed (and
	// what a discard records). ExitCode and StartedAt are Run's to set.
	Settle CommitOptions
	// Ended, if set, is called once the command has ended and before the
	// transaction settles, so that a caller can say how it ended.
	Ended func(*RunResult)
}

// RunResult is how a command run by Tx.Run ended and how its transaction
// settled.
type RunResult struct {
	Tx *Tx
	// ExitCode is the command's exit code: 128+N after death by signal N,
	// 127 when it was not found, 126 when it could not be executed, and -1
	// when its end could not be observed.
	ExitCode int
	// Signal, when not zero, is the signal that killed the command.
	Signal syscall.Signal
	// Succeeded says the command exited 0 on its own, so Run commits; every
	// other end discards.
	Succeeded bool
	// SamePath says the command saw the staged workspace at the base's path.
	SamePath bool
	// Fallback, when same-path mode was asked for but could not be had,
	// says why in one line.
	Fallback string
	// Contained says the command ran in a PID namespace of its own (Linux,
	// as root or in a user namespace): every process it started, however
	// it detached, had ended before the transaction settled. Uncontained
	// says why not, where no PID namespace could be had.
	Contained   bool
	Uncontained string
	// Ended names the processes the command left running when it exited
	// ("PID (name)", as its namespace numbered them): Run ended them
	// (SIGTERM, then SIGKILL after two seconds) before settling.
	Ended []string
	// Watched says the change set was read from what a watch of the
	// staged tree saw the command write, not from a walk of the tree;
	// Unwatched says why not, where a watch was wanted (see NoWatchEnv).
	Watched   bool
	Unwatched string
	// Settled is the transaction's outcome; nil when settling failed before
	// one was recorded.
	Settled *Result
}

// CommandError is the error Tx.Run returns when its command did not
// succeed, and so its transaction was discarded: the command exited
// non-zero, was killed by a signal, or could not be started.
type CommandError struct {
	Name string // the command as given
	// Code is the command's exit code, as in RunResult.ExitCode: 127 or
	// 126 when it could not be started.
	Code int
	// Err, for a command that could not be started, says why; nil for one
	// that ran.
	Err error
}

func (e *CommandError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s exited with code %d; its changes were discarded", e.Name, e.Code)
}

func (e *CommandError) Unwrap() error { return e.Err }

// ExitCode is the code a shell around the command would report.
func (e *CommandError) ExitCode() int { return e.Code }

// Run opens a transaction as Open does and runs a command in it as Tx.Run
// does. An error that leaves no transaction returns a nil RunResult.
func (s *Store) Run(ctx context.Context, open OpenOptions, o RunOptions) (_ *RunResult, err error) {
	defer exported(&err)
	if open.Command == nil {
		open.Command = o.Argv
	}
	open.ForRun = true
	tx, err := s.Open(ctx, open)
	if err != nil {
		return nil, err
	}
	return tx.Run(ctx, o)
}

// Run runs a command in the transaction's staged workspace and settles the
// transaction by the command's exit code alone: exit 0 commits; any other
// exit, a death by signal, a command that could not be started, or an exit
// that could not be observed discards.
//
// The command's environment gains AIRLOCK_TX (the transaction's id) and
// AIRLOCK_PORT_BASE (the first of the ports no other open transaction
// holds). While it runs, SIGINT and SIGTERM sent to this process are
// forwarded to it rather than acted on; without a controlling terminal they
// reach its whole process group at once. The transaction settles even when
// ctx is cancelled, which only stops the command.
//
// The error is nil only when the command succeeded and the commit did too
// (committed or no changes). A refused commit returns a *Refusal, a command
// that did not succeed a *CommandError, and anything else means airlock
// itself failed. The RunResult is returned in every case.
func (t *Tx) Run(ctx context.Context, o RunOptions) (_ *RunResult, err error) {
	defer exported(&err)
	if len(o.Argv) == 0 || o.Argv[0] == "" {
		return nil, errors.New("run: no command given")
	}
	spec, err := t.launchSpec(o.Argv, startDir(t.Base(), o.Dir), o.Env, o.SamePath)
	if err != nil {
		return nil, err
	}
	spec.Stdin, spec.Stdout, spec.Stderr = o.Stdin, o.Stdout, o.Stderr
	started := time.Now()
	defer t.watch.close()
	lr, registered, runErr := t.store.launchRegistered(ctx, t.ID(), spec)
	t.watch.stop(lr.Contained)
	// What the command left running, and whether its tree can be pooled:
	// see pool.Account. A command Exec ran earlier that was not accounted
	// for keeps the tree out of the pool whatever this one did.
	acc := pool.Account(lr)
	t.contained, t.registered, t.leftovers = acc.Contained && !t.execUnaccounted, registered, acc.Leftovers
	res := &RunResult{Tx: t, ExitCode: lr.ExitCode, Signal: lr.Signal,
		Succeeded: runErr == nil && lr.ExitCode == 0, SamePath: lr.SamePath, Fallback: lr.Fallback,
		Contained: lr.Contained, Uncontained: lr.Uncontained, Ended: lr.Ended}
	if o.Ended != nil {
		o.Ended(res)
	}

	so := o.Settle
	code := res.ExitCode
	so.ExitCode, so.StartedAt = &code, started
	if code < 0 {
		so.ExitCode = nil
	}
	// Settling must finish even when the run was interrupted: a signal was
	// the command's to handle, and a cancelled ctx stopped only the command.
	sctx := context.WithoutCancel(ctx)
	var settleErr error
	if res.Succeeded {
		res.Settled, settleErr = t.Commit(sctx, so)
	} else {
		res.Settled, settleErr = t.Discard(sctx, DiscardOptions{ExitCode: so.ExitCode, StartedAt: so.StartedAt, ReceiptCopy: so.ReceiptCopy})
	}

	if t.watch != nil {
		res.Watched, res.Unwatched = t.watch.changes != nil, t.watch.off
	}

	var refusal *Refusal
	var execErr *launch.ExecError
	switch {
	case errors.As(settleErr, &refusal):
		return res, refusal
	case settleErr != nil:
		return res, settleErr
	case errors.As(runErr, &execErr):
		return res, &CommandError{Name: o.Argv[0], Code: res.ExitCode, Err: runErr}
	case runErr != nil:
		return res, fmt.Errorf("run %s: %w", o.Argv[0], runErr)
	case !res.Succeeded:
		return res, &CommandError{Name: o.Argv[0], Code: res.ExitCode}
	}
	return res, nil
}

// launchSpec is how a command of this transaction is launched, Run's and
// Exec's alike: in its staged workspace (at the base's path when samePath
// and the transaction allows it), starting in dir (slash-separated,
// relative to the workspace's root), with env (nil: this process's) and
// the transaction's variables, contained, and with the state root
// read-only but for the transaction's own directories.
func (t *Tx) launchSpec(argv []string, dir string, env []string, samePath bool) (launch.Spec, error) {
	if env == nil {
		env = os.Environ()
	}
	env = append(env[:len(env):len(env)],
		"AIRLOCK_TX="+t.ID(),
		"AIRLOCK_PORT_BASE="+strconv.Itoa(t.rec.PortBase))
	// The one place in the state root besides its tree that the command
	// may write: where the hooks of an agent run inside it check (Check).
	// Nothing outside a hook's check reads it.
	hooks, err := t.hookScratch()
	if err != nil {
		return launch.Spec{}, err
	}
	spec := launch.Spec{
		Argv: argv, Staged: t.Path(), Base: t.Base(), Dir: dir,
		Env: env, SamePath: samePath && t.SamePathOff() == "",
		// Contained, the command's processes are known by construction:
		// none outlives the run, and the change set is read when none is
		// left to write it.
		Contain: !fault.Off("contain"),
		// The state root is airlock's: the command may write its own
		// transaction's directory (its tree; the hooks of an agent run
		// inside it), and nothing else there, so it cannot forge what a
		// later transaction trusts (pool records, clock facts, journals).
		ReadOnly: t.store.Dir(), Writable: []string{t.Path(), hooks}, Hidden: []string{t.store.commands().Dir(), watchd.New(t.store.Dir()).Dir()},
	}
	if fsType, data, ok := stage.HostedMount(t.Base(), t.Path()); ok {
		// The workspace exists only in the command's namespace: the
		// launcher mounts it there, and the change set is read from its
		// upper layer once the command has ended.
		spec.Mount = &launch.Mount{FSType: fsType, Source: fsType, Data: data}
	}
	// The watch open started covers the command only if it cannot make
	// a second name for a file (launch.Spec.Watched).
	spec.Watched = t.watch.watching()
	return spec, nil
}

// SamePathOff says why the command of this transaction must not see its
// workspace at the base's path, or "" when it may. git in a worktree
// workspace reaches its repository through the base's path, which the bind
// mount would hide (a base at the repository's top) or stand in for with
// the base's own repository (a base in a subdirectory).
func (t *Tx) SamePathOff() string {
	if t.rec.Backend == stage.Worktree {
		return "same-path mode is off for --backend worktree (git in the staged worktree reaches its repository through the base's path)"
	}
	return ""
}

// startDir is the directory, relative to the base, where the command starts:
// the counterpart of dir ("" for the current directory) when it lies inside
// the base, else the root.
func startDir(base, dir string) string {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return ""
		}
		dir = wd
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	rel, err := filepath.Rel(base, dir)
	if err != nil || !filepath.IsLocal(rel) {
		return ""
	}
	return filepath.ToSlash(rel)
}
