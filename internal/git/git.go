package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Repo is how a command finds its repository.
type Repo struct {
	dir    string   // git -C dir: discovered from a directory in a work tree
	gitDir string   // git --git-dir=gitDir: the repository itself, no work tree
	index  string   // GIT_INDEX_FILE, named by airlock itself (WithIndex)
	env    []string // set after the hardened environment (Ignored, WithEnv)
	cwd    string   // the working directory git starts in (WithCwd)
	// tethered: in a process group that ends with the context and with
	// airlock (Tethered).
	tethered bool
}

// In names the repository that holds dir, found as git finds it for a user
// standing in dir; relative pathspecs and output are relative to dir.
func In(dir string) Repo { return Repo{dir: dir} }

// At names a repository by its git directory, for commands that need no
// work tree (refs, objects, the worktree list).
func At(gitDir string) Repo { return Repo{gitDir: gitDir} }

// WithIndex is r with its index at path. The index variable an inherited
// environment sets is dropped (environ.go); this one is airlock's own
// choice, a scratch index in which it builds a tree without touching the
// repository's index (a landing's candidate, see the root package).
func (r Repo) WithIndex(path string) Repo {
	r.index = path
	return r
}

// Run runs git with args in r and returns its standard output.
func (r Repo) Run(ctx context.Context, args ...string) ([]byte, error) {
	return r.run(ctx, nil, args)
}

// RunInput is Run with stdin as git's standard input.
func (r Repo) RunInput(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return r.run(ctx, stdin, args)
}

// Run runs a git command that needs no repository (check-ref-format).
func Run(ctx context.Context, args ...string) ([]byte, error) {
	return Repo{}.run(ctx, nil, args)
}

// hardening comes before the caller's arguments. Command-line configuration
// outranks every configuration file, the repository's own included.
var hardening = []string{
	// Hooks are the user's code: airlock's own bookkeeping (update-ref,
	// worktree add) never runs them.
	"-c", "core.hooksPath=/dev/null",
	// An fsmonitor is a command git would start, and a daemon watching the
	// tree that outlives the call.
	"-c", "core.fsmonitor=false",
}

// waitDelay is how long a killed or finished git's pipes are waited for: a
// child of git (a remote helper) may hold them after git itself is gone.
const waitDelay = 2 * time.Second

func (r Repo) run(ctx context.Context, stdin []byte, args []string) ([]byte, error) {
	argv := slices.Clone(hardening)
	switch {
	case r.dir != "":
		argv = append(argv, "-C", r.dir)
	case r.gitDir != "":
		argv = append(argv, "--git-dir="+r.gitDir)
	}
	cmd := r.command(ctx, append(argv, args...))
	cmd.Env = environ(os.Environ())
	if r.index != "" {
		cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+r.index)
	}
	cmd.Env = append(cmd.Env, r.env...)
	cmd.Dir = r.cwd
	cmd.WaitDelay = waitDelay
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := runPinned(cmd, r.tethered)
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState.Success() && ctx.Err() == nil {
		// git finished and said what it had to; a child it left
		// behind holding the pipe is not its failure.
		err = nil
	}
	if err == nil {
		return stdout.Bytes(), nil
	}
	e := &Error{Repo: r, Args: args, Stderr: message(stderr.String()), Err: err}
	if ctx.Err() != nil {
		e.Err = fmt.Errorf("stopped: %w", context.Cause(ctx))
	}
	return stdout.Bytes(), e
}

// message is git's stderr without its progress lines, which are not the
// error.
func message(stderr string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "Preparing worktree") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// Error is a git command that failed: it exited non-zero, could not be
// started, or was stopped when its context ended.
type Error struct {
	Repo   Repo
	Args   []string
	Stderr string // what git said, progress lines removed
	Err    error  // the exit status, exec's error, or the context's cause
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("git")
	switch {
	case e.Repo.dir != "":
		b.WriteString(" -C " + quote(e.Repo.dir))
	case e.Repo.gitDir != "":
		b.WriteString(" --git-dir=" + quote(e.Repo.gitDir))
	}
	for _, a := range e.Args {
		b.WriteString(" " + quote(a))
	}
	b.WriteString(": ")
	// A git that ran to its end said why in its stderr; one that could not
	// start or was stopped did not.
	var exit *exec.ExitError
	if !errors.As(e.Err, &exit) || e.Stderr == "" {
		b.WriteString(e.Err.Error())
		if e.Stderr != "" {
			b.WriteString("; ")
		}
	}
	b.WriteString(strings.ReplaceAll(e.Stderr, "\n", "; "))
	if errors.Is(e.Err, exec.ErrNotFound) {
		b.WriteString(" (install git, or put it on PATH)")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// quote leaves a printable argument as it is and quotes one that would not
// read as a single word on one line.
func quote(s string) string {
	if s != "" && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		return s
	}
	return strconv.Quote(s)
}
