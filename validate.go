package airlock

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/watchd"
)

const (
	candidateDir = "candidate"
	validateLog  = "validate.log"
)

// validators are the commands a commit validates with, in the order they
// run: the project's validate, then the one the caller adds. The project's
// is read from the config that governs the base as it is now (gate, see
// projectNow), never from the staged tree's and not from the transaction's
// state alone. A caller — the CLI, the MCP commit tool, a hook, the review
// page — can add a validator but never replace or drop the project's: for
// an agent that gate is the point, and it must not be able to lower it
// through whatever interface it reaches airlock by.
//
// The project's validate is the one recorded at open and, when the config
// now says another, that one too: a person who changes the config while a
// transaction is open does not lower that transaction's gate, and an edit
// of the transaction's state does not either.
func (t *Tx) validators(o CommitOptions, gate *project.Project) []string {
	var v []string
	for _, cmd := range []string{t.rec.Validate, gate.Cfg.Validate, strings.TrimSpace(o.Validate)} {
		// Running a command twice would prove nothing more.
		if cmd != "" && !slices.Contains(v, cmd) {
			v = append(v, cmd)
		}
	}
	return v
}

// projectValidators are the project's validators, the first that
// validators returns.
func (t *Tx) projectValidators(gate *project.Project) []string {
	var v []string
	for _, cmd := range []string{t.rec.Validate, gate.Cfg.Validate} {
		if cmd != "" && !slices.Contains(v, cmd) {
			v = append(v, cmd)
		}
	}
	return v
}

// validate runs the validators of o and the project's gate in order in
// one candidate tree: a throw-away copy of the tree from (the base as it is
// now, read through w.base) — for a base beneath its project root, the
// whole project (see project) — with the prepared operations applied.
// Whatever they write stays in the candidate. The first that fails
// refuses; the project's runs first, so that no added validator touches
// the candidate before the project's has judged it. It returns the
// commands that ran. The base is re-checked afterwards by the journal's
// preparation, which refuses any path that moved meanwhile.
//
// SIGINT and SIGTERM stop it (see interruptible): no verdict, and the
// commit returns a *CancelledError.
func (t *Tx) validate(ctx context.Context, w *workspace, from string, ops []journal.Op, o CommitOptions, gate *project.Project) (*Refusal, []string, error) {
	cmds := t.validators(o, gate)
	if len(cmds) == 0 {
		return nil, nil, nil
	}
	return t.interruptible(ctx, func(ctx context.Context) (*Refusal, []string, error) {
		return t.validateIn(ctx, w, from, ops, cmds, gate)
	})
}

// validateIn is validate with SIGINT and SIGTERM caught.
func (t *Tx) validateIn(ctx context.Context, w *workspace, from string, ops []journal.Op, cmds []string, gate *project.Project) (*Refusal, []string, error) {
	dir := w.path(candidateDir)
	copier, err := stage.Get(stage.Copy)
	if err != nil {
		return nil, nil, err
	}
	if err := copier.Remove(ctx, dir); err != nil {
		return nil, nil, err
	}
	defer copier.Remove(context.WithoutCancel(ctx), dir)
	// The candidate is the whole project: for a base beneath the project
	// root, the root as it is now with the change set applied under the
	// base's place in it (see project). Where the base cannot be seen at
	// all (limited), the staged tree alone is what can be judged.
	under, runAt, skip := "", t.Base(), func(string, bool) bool { return false }
	if gate.Under != "" && !w.limited {
		from, under, runAt, skip = t.projectRead(w, gate), gate.Under, gate.Root, t.skipState(gate.Root)
	}
	if _, err := copier.Stage(ctx, stage.Request{Base: from, Dir: dir, Skip: skip}); err != nil {
		return nil, nil, fmt.Errorf("build the validation candidate: %w", err)
	}
	root, err := safefs.OpenRoot(filepath.Join(dir, filepath.FromSlash(under)))
	if err != nil {
		return nil, nil, fmt.Errorf("build the validation candidate: %w", err)
	}
	_, err = journal.ApplyScratch(ctx, root, t.ID(), ops, w.path(objectsDir))
	root.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("build the validation candidate: %w", err)
	}
	return t.runValidators(ctx, cmds, gate, candidateRun{dir: dir, base: runAt, log: w.log})
}

// interruptible runs validate, a validation, with SIGINT and SIGTERM
// caught (see interrupts): a signal that reaches airlock at any moment of
// it stops it, the validator that runs ending with its whole process
// group (launch.Spec.EndGroup). What the validation had found is then no
// verdict: it returns a *CancelledError whose cause is an
// *InterruptedError, and the commit records nothing, as for a caller's
// context that ends before the journal (Tx.Commit). An error that the
// caller's own context ending caused is a *CancelledError too.
func (t *Tx) interruptible(ctx context.Context, validate func(context.Context) (*Refusal, []string, error)) (*Refusal, []string, error) {
	irq := catchInterrupts(ctx)
	r, ran, err := validate(irq.ctx)
	if s := irq.stop(); s != 0 {
		return nil, ran, &CancelledError{TxID: t.ID(), Cause: &InterruptedError{Signal: s}}
	}
	if err != nil && ctx.Err() != nil {
		return nil, ran, t.cancelled(ctx)
	}
	return r, ran, err
}

// candidateRun is where validators run: the candidate tree dir, shown at
// base's path where same-path mode can be had, starting in sub (a
// slash-separated directory of dir, "" for its top), with their output in
// log.
type candidateRun struct {
	dir, base, sub, log string
}

// runValidators runs cmds in order in one candidate tree, as validate
// describes; the first that fails refuses. It returns the commands that
// ran.
func (t *Tx) runValidators(ctx context.Context, cmds []string, gate *project.Project, at candidateRun) (*Refusal, []string, error) {
	logPath := at.log
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("validation log: %w", err)
	}
	defer logf.Close()
	var ran []string
	project := t.projectValidators(gate)
	for i, cmd := range cmds {
		source := "caller"
		if i < len(project) && cmd == project[i] {
			source = "project"
		}
		if len(cmds) > 1 {
			// One log for all: say where each one's output begins.
			fmt.Fprintf(logf, "airlock: validating with `%s` (%s)\n", cmd, source)
		}
		t.event("validating", map[string]any{"command": cmd, "source": source})
		// The project's validator runs with a controlled environment (see
		// validateEnv); the caller's own runs with the caller's.
		env := os.Environ()
		// The project's runs in /bin/sh itself: found on the committer's
		// PATH, `sh` could be anything.
		shell := "sh"
		if source == "project" {
			env = validateEnv(env, gate.Cfg.ValidateEnv)
			shell = "/bin/sh"
		}
		env = append(env, "AIRLOCK_TX="+t.ID(), "AIRLOCK_VALIDATE=1")
		// Contained, and in a group of its own that ends with it: a
		// validator reads no terminal, and one that is interrupted must
		// leave nothing running, nor should any it leaves behind (however
		// it detached) outlive the candidate. The group is what ends it
		// where no PID namespace can be had.
		// Registered as running under the state root, as a run's command
		// is: a pooled tree is reused only after a moment none ran.
		res, _, runErr := t.store.launchRegistered(ctx, t.ID(), launch.Spec{
			Argv: []string{shell, "-c", cmd}, Staged: at.dir, Base: at.base, Dir: at.sub, Env: env,
			SamePath: true, Stdout: logf, Stderr: logf, EndGroup: true, Contain: !fault.Off("contain"),
			// The state root is read-only to it but for its candidate.
			ReadOnly: t.store.Dir(), Writable: []string{at.dir}, Hidden: []string{t.store.commands().Dir(), watchd.New(t.store.Dir()).Dir()},
		})
		logf.Sync()
		if res.Interrupted != 0 {
			// SIGINT or SIGTERM reached airlock (and, forwarded, the
			// validator): whatever it exited with is no verdict.
			return nil, ran, &CancelledError{TxID: t.ID(), Cause: &InterruptedError{Signal: res.Interrupted}}
		}
		if ctx.Err() != nil {
			// The caller gave up and the validator was stopped: its exit
			// says nothing about the candidate.
			return nil, ran, t.cancelled(ctx)
		}
		if runErr != nil && res.ExitCode < 0 {
			return nil, ran, fmt.Errorf("run the validator `%s`: %w", cmd, runErr)
		}
		ran = append(ran, cmd)
		t.event("validated", map[string]any{"exit_code": res.ExitCode, "command": cmd})
		if res.ExitCode != 0 {
			whose := "the project's validator"
			if source == "caller" {
				whose = "the added validator"
			}
			return refuse(ValidationFailed, nil, "%s `%s` exited %d on the candidate; its output is in %s%s", whose, cmd, res.ExitCode, logPath, tail(logPath)), ran, nil
		}
	}
	return nil, ran, nil
}

// tail returns the last lines of a log, indented, for a refusal message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	var buf bytes.Buffer
	buf.WriteString("; last lines:")
	for _, l := range lines {
		io.WriteString(&buf, "\n  | "+l)
	}
	return buf.String()
}

// validateEnv is the environment the project's validator runs with: not the committing process's whole environment, which an agent
// that runs `airlock commit` controls (MAKEFLAGS=n turns `make test` into
// a dry run, GOFLAGS=-run=^$ runs no Go test), but the variables a shell
// and its tools need to find themselves (validateBaseEnv), the locale
// (LC_*), and the variables the project config lists in validate_env.
func validateEnv(environ []string, allow []string) []string {
	keep := map[string]bool{}
	for _, k := range validateBaseEnv {
		keep[k] = true
	}
	for _, k := range allow {
		keep[k] = true
	}
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && (keep[k] || strings.HasPrefix(k, "LC_")) {
			out = append(out, kv)
		}
	}
	// Where programs are found, and the home their configuration is read
	// from, are the committer's to choose only if the project says so:
	// otherwise a PATH with a fake `make` or `sh` first, or a HOME with a
	// ~/.npmrc or ~/.gitconfig of the committer's making, would decide the
	// validator's verdict.
	set := map[string]bool{}
	for _, k := range allow {
		set[k] = true
	}
	if !set["PATH"] {
		out = append(out, "PATH="+validatePath)
	}
	if !set["HOME"] {
		if u, err := user.Current(); err == nil && u.HomeDir != "" {
			out = append(out, "HOME="+u.HomeDir)
		}
	}
	if !set["SHELL"] {
		out = append(out, "SHELL=/bin/sh")
	}
	return out
}

// validatePath is the PATH of the project's validator unless its config
// lists PATH in validate_env: the system's directories, the Go toolchain's
// usual place, nothing the committer chose.
const validatePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin:/opt/homebrew/bin"

// validateBaseEnv are the variables every validator gets from the
// committing process's environment (PATH, HOME and SHELL only where the
// project's validate_env lists them; see validateEnv).
var validateBaseEnv = []string{"USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "TZ"}
