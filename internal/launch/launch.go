package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Spec says what to run and where.
type Spec struct {
	// Argv is the command and its arguments; Argv[0] is resolved like a
	// shell would, against the PATH in Env.
	Argv []string
	// Staged is the absolute root of the staged workspace.
	Staged string
	// Base is the absolute root of the base; same-path mode mounts Staged
	// over it.
	Base string
	// Dir is the slash-separated directory, relative to the root, in which
	// the command starts ("" is the root).
	Dir string
	// Env is the command's whole environment; nil means airlock's own.
	// PWD is set to the directory the command starts in.
	Env []string
	// SamePath asks for same-path mode; Run falls back to the staged path
	// where it cannot be had.
	SamePath bool
	// Stdin, Stdout and Stderr are the command's streams; nil connects the
	// null device. An *os.File is handed to the command as it is.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// EndGroup makes the command the leader of a process group of its
	// own, with a controlling terminal or without, and ends that group
	// with the command: once the command has exited, whatever it left
	// running in its group is killed (SIGKILL). For a command that reads
	// no terminal and must leave nothing behind (a validator, whose tree
	// is thrown away): SIGINT and SIGTERM then reach all of it at once,
	// and what ignores them still ends with it.
	EndGroup bool
	// Mount, when set, is a file system to mount at Staged inside the
	// command's own namespace before anything else: the staged workspace
	// exists only there (overlay without root). The command then always
	// runs in a namespace of its own, and where none can be had Run fails
	// instead of falling back to the staged path, where there is nothing.
	Mount *Mount
	// Contain runs the command in a PID namespace of its own (Linux, as
	// root or inside a user namespace), so that every process it starts,
	// however it detaches (setsid, a double fork, a cleared environment),
	// stays in it. When the command exits, whatever it left running is
	// ended (SIGTERM, then SIGKILL after a grace period), and Run returns
	// only once every one of them is gone: Result.Contained. Where no PID
	// namespace can be had, the command runs uncontained and
	// Result.Uncontained says why.
	Contain bool
	// ReadOnly, when set, is a directory the command sees read-only
	// (airlock's state root), all of it but the directories beneath it in
	// Writable (the transaction's staged tree, and the scratch directory
	// the hooks of an agent run inside it check in), and with each of
	// Hidden beneath it shown empty (the registry of running commands,
	// whose lock a command could otherwise hold). Records, manifests, pool
	// records, cached clock facts, journals and other transactions' state
	// are then not the command's to forge. It holds wherever the command
	// runs in a namespace of its own: contained, in same-path mode, or
	// with a Mount; a command run directly sees the state as its user
	// does.
	ReadOnly         string
	Writable, Hidden []string
	// Watched says the staged tree's writes are being watched by path
	// (internal/watch), which a second name for a file would defeat: a
	// write through one name is seen under that name only. The command
	// then cannot make hard links (link(2) and linkat(2) fail with EXDEV,
	// as across file systems, and every tool that makes them falls back
	// to copying) nor open a file by handle (open_by_handle_at(2) fails
	// with EPERM). Honoured only in a namespace of the helper's, that is
	// when Result.Contained; LinkGuard says whether this kernel can.
	Watched bool
}

// Mount is a file system as mount(2) takes it.
type Mount struct {
	FSType, Source string
	// Data is the file system's option string.
	Data string
}

// Result is how the command ended.
type Result struct {
	// ExitCode is the command's exit code, 128+N after death by signal N,
	// 127 when the command was not found, 126 when it could not be
	// executed, and -1 when there is no exit code to report (Run failed
	// before or while waiting for the command).
	ExitCode int
	// Signaled says the command was killed by Signal.
	Signaled bool
	Signal   syscall.Signal
	// SamePath says the command saw the staged tree at the base's path.
	SamePath bool
	// Fallback, when same-path mode was asked for but not used, says why
	// in one line.
	Fallback string
	// Contained says the command ran in a PID namespace of its own and
	// that every process of that namespace had ended when Run returned.
	Contained bool
	// Uncontained, when Contain was asked for but could not be had, says
	// why in one line.
	Uncontained string
	// Ended names the processes the command left running when it exited
	// ("PID (comm)", PID as its namespace numbers it), which Run ended.
	Ended []string
	// Interrupted is the first SIGINT or SIGTERM this process received
	// while Run ran (forwarded to the command, or left to the terminal
	// that sent it there too), 0 when none: the command did not end on
	// its own account, whatever its exit code says.
	Interrupted syscall.Signal
}

var (
	// ErrNotFound means the command could not be found (exit code 127).
	ErrNotFound = errors.New("command not found")
	// ErrNotExecutable means the command was found but could not be
	// executed (exit code 126).
	ErrNotExecutable = errors.New("command not executable")
)

// ExecError is the error Run returns when the command could not be started:
// errors.Is matches ErrNotFound or ErrNotExecutable, and the system error
// that caused it.
type ExecError struct {
	Name  string // the command as given
	Kind  error  // ErrNotFound or ErrNotExecutable
	Cause error  // the errno from the lookup or from execve
}

func (e *ExecError) Error() string {
	if e.Kind == ErrNotFound {
		return e.Name + ": command not found"
	}
	return e.Name + ": " + e.Cause.Error()
}

func (e *ExecError) Unwrap() []error { return []error{e.Kind, e.Cause} }

// ExitCode is the shell's code for this failure: 127 or 126.
func (e *ExecError) ExitCode() int {
	if e.Kind == ErrNotFound {
		return 127
	}
	return 126
}

// execError classifies a failed lookup or execve the way a shell does:
// only a missing file is "not found"; every other reason the kernel gives
// (no permission, not a binary, a directory, …) is "cannot execute".
func execError(name string, errno syscall.Errno) *ExecError {
	if errno == syscall.ENOENT {
		return &ExecError{Name: name, Kind: ErrNotFound, Cause: errno}
	}
	return &ExecError{Name: name, Kind: ErrNotExecutable, Cause: errno}
}

// helperEnv marks a start of this binary as the same-path helper; the
// helper removes it before the command runs.
const helperEnv = "_AIRLOCK_LAUNCH_HELPER"

// killGrace is how long a command whose context was cancelled gets between
// SIGTERM and SIGKILL, and how long Run waits for output copying after the
// command has exited.
var killGrace = 5 * time.Second

// Run runs spec.Argv and waits for it to end. While it runs, SIGINT and
// SIGTERM sent to this process are forwarded to the command rather than
// acted on. A non-nil error with Result.ExitCode 127 or 126 is an
// *ExecError; any other error means the command's end could not be
// observed and Result.ExitCode is -1. Cancelling ctx sends the command
// SIGTERM, then SIGKILL after a grace period, and makes Run return an error.
func Run(ctx context.Context, spec Spec) (Result, error) {
	if err := spec.validate(); err != nil {
		return Result{ExitCode: -1}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("run %s: %w", spec.Argv[0], err)
	}
	fw := startForwarding(spec.EndGroup)
	res, err := run(ctx, spec, fw)
	fw.stop()
	res.Interrupted = fw.interrupted()
	return res, err
}

func run(ctx context.Context, spec Spec, fw *forwarder) (Result, error) {
	if spec.Mount != nil {
		res, fallback, err := runSamePath(ctx, spec, fw)
		if fallback != "" {
			return Result{ExitCode: -1}, fmt.Errorf("run %s: its staged workspace %s exists only once mounted in the command's own namespace, and %s", spec.Argv[0], spec.Staged, fallback)
		}
		return res, err
	}
	if !spec.SamePath && !spec.Contain {
		return runDirect(ctx, spec, fw)
	}
	res, fallback, err := runSamePath(ctx, spec, fw)
	if fallback == "" {
		return res, err
	}
	res, err = runDirect(ctx, spec, fw)
	if spec.SamePath {
		res.Fallback = fallback
	}
	if spec.Contain {
		res.Uncontained = fallback
	}
	return res, err
}

func (s *Spec) validate() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return errors.New("run: no command given")
	}
	if !filepath.IsAbs(s.Staged) {
		return fmt.Errorf("run %s: staged workspace path %q is not absolute", s.Argv[0], s.Staged)
	}
	if s.SamePath && !filepath.IsAbs(s.Base) {
		return fmt.Errorf("run %s: base path %q is not absolute", s.Argv[0], s.Base)
	}
	if c := path.Clean(s.Dir); path.IsAbs(s.Dir) || c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Errorf("run %s: start directory %q is not a relative path inside the workspace", s.Argv[0], s.Dir)
	}
	return nil
}

// relDir is spec.Dir as a native relative path ("" for the root).
func (s *Spec) relDir() string {
	d := path.Clean(s.Dir)
	if d == "." {
		return ""
	}
	return filepath.FromSlash(d)
}

// runDirect runs the command at the staged path.
func runDirect(ctx context.Context, spec Spec, fw *forwarder) (Result, error) {
	name := spec.Argv[0]
	cwd := filepath.Join(spec.Staged, spec.relDir())
	// exec.Cmd reports a missing working directory and a missing program
	// with the same error, so check the directory first: its absence is
	// airlock's failure, not the command's.
	if fi, err := os.Stat(cwd); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("run %s: start directory: %w", name, err)
	} else if !fi.IsDir() {
		return Result{ExitCode: -1}, fmt.Errorf("run %s: start directory %s is not a directory", name, cwd)
	}
	env := commandEnv(spec.Env, cwd)
	prog, errno := lookPath(name, envPath(env), cwd)
	if errno != 0 {
		ee := execError(name, errno)
		return Result{ExitCode: ee.ExitCode()}, ee
	}

	cmd := exec.CommandContext(ctx, prog)
	cmd.Args = spec.Argv
	cmd.Dir = cwd
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: fw.group}
	cmd.Cancel = func() error { return signalCommand(cmd.Process, fw.group, syscall.SIGTERM) }
	cmd.WaitDelay = killGrace
	if err := cmd.Start(); err != nil {
		var pe *os.PathError
		var errno syscall.Errno
		if errors.As(err, &pe) && errors.As(pe.Err, &errno) && errno != syscall.EAGAIN {
			ee := execError(name, errno)
			return Result{ExitCode: ee.ExitCode()}, ee
		}
		return Result{ExitCode: -1}, fmt.Errorf("run %s: %w", name, err)
	}
	fw.attach(processTarget(cmd.Process, fw.group))
	err := wait(cmd, spec.EndGroup)
	fw.detach()
	return waitResult(ctx, name, cmd.ProcessState, err)
}

// waitResult turns what Wait saw into a Result.
func waitResult(ctx context.Context, name string, ps *os.ProcessState, waitErr error) (Result, error) {
	if ps == nil {
		return Result{ExitCode: -1}, fmt.Errorf("wait for %s: its exit could not be observed: %w", name, waitErr)
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	return statusResult(ctx, name, ws)
}

// statusResult turns a wait status into a Result.
func statusResult(ctx context.Context, name string, ws syscall.WaitStatus) (Result, error) {
	res := Result{ExitCode: ws.ExitStatus()}
	if ws.Signaled() {
		res = Result{ExitCode: 128 + int(ws.Signal()), Signaled: true, Signal: ws.Signal()}
	}
	if err := ctx.Err(); err != nil {
		// Whatever it exited with, it did not finish on its own.
		return res, fmt.Errorf("run %s: interrupted: %w", name, err)
	}
	return res, nil
}

// commandEnv is the command's environment: env (airlock's own when nil)
// without the helper's marker, with PWD naming cwd so that shells print the
// logical directory.
func commandEnv(env []string, cwd string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if strings.HasPrefix(kv, "PWD=") || strings.HasPrefix(kv, helperEnv+"=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PWD="+cwd)
}

// envPath is the PATH in env; unset means the search path execvp uses.
func envPath(env []string) string {
	p, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			p, ok = v, true
		}
	}
	if !ok {
		return "/usr/local/bin:/usr/bin:/bin"
	}
	return p
}

// lookPath resolves name like a POSIX shell: a name with a slash is taken
// as it is (relative to cwd), otherwise PATH is searched, an empty entry
// meaning cwd. When PATH holds only non-executable matches, the first is
// returned with its error, so the caller reports 126 rather than 127, as
// bash does. Errors are errnos so that the same-path helper can send them
// to the parent.
func lookPath(name, pathEnv, cwd string) (string, syscall.Errno) {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		// Not filepath.Join: cleaning "a/../b" is not what the kernel does
		// when a is a symlink.
		return cwd + string(filepath.Separator) + p
	}
	if strings.Contains(name, "/") {
		p := abs(name)
		_, errno := checkExec(p)
		return p, errno
	}
	var denied string
	var deniedErr syscall.Errno
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			dir = "."
		}
		p := abs(dir + "/" + name)
		isFile, errno := checkExec(p)
		if errno == 0 {
			return p, 0
		}
		if isFile && denied == "" {
			denied, deniedErr = p, errno
		}
	}
	if denied != "" {
		return denied, deniedErr
	}
	return "", syscall.ENOENT
}

// checkExec says whether p is an executable file: isFile reports that p
// exists and is not a directory, whatever the verdict.
func checkExec(p string) (isFile bool, errno syscall.Errno) {
	fi, err := os.Stat(p)
	if err != nil {
		return false, toErrno(err)
	}
	if fi.IsDir() {
		return false, syscall.EISDIR
	}
	if err := unix.Access(p, unix.X_OK); err != nil {
		return true, toErrno(err)
	}
	return true, 0
}

func toErrno(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.EINVAL
}
