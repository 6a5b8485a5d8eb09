package testbin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// DefaultTimeout bounds a process whose Cmd gives no Timeout.
const DefaultTimeout = time.Minute

// waitDelay is how long Wait waits, once the process has ended, for
// grandchildren still holding its output pipes: a command airlock started
// may outlive a killed airlock, and the test must not wait for it forever.
const waitDelay = 5 * time.Second

// Cmd is one process a test starts: the airlock under test or any other
// program, as a user or an agent would run it.
type Cmd struct {
	Bin   string   // the program: a path, or a name looked up on the test's PATH
	Args  []string // its arguments, without the program
	Dir   string   // the working directory
	Env   []string // the whole environment (see Environ)
	Stdin string
	Cred  *syscall.Credential // run as this user, when set
	// Setsid starts the process in a session of its own, without a
	// controlling terminal, as a harness that runs airlock in the
	// background would.
	Setsid bool
	// Timeout bounds the process (DefaultTimeout when zero): a process
	// still running then is killed and fails the test, so that a hang is a
	// failure, not a stuck test run.
	Timeout time.Duration
}

// Command is c as an exec.Cmd bound to ctx, for a caller that must hand
// the process to something else to drive (an MCP client's transport).
func (c Cmd) Command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Bin, c.Args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	if c.Stdin != "" {
		cmd.Stdin = strings.NewReader(c.Stdin)
	}
	if c.Cred != nil || c.Setsid {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.Cred, Setsid: c.Setsid}
	}
	cmd.WaitDelay = waitDelay
	return cmd
}

// argv is c's command line as a Result names it: the program's base name
// and its arguments.
func (c Cmd) argv() []string {
	return append([]string{filepath.Base(c.Bin)}, c.Args...)
}

// Result is how a process ended.
type Result struct {
	Args   []string // the program's base name, then its arguments
	Stdout string
	Stderr string
	Code   int            // the exit code; -1 when a signal killed it
	Signal syscall.Signal // the signal that killed it, or 0
}

func (r Result) String() string {
	return fmt.Sprintf("%q: exit %d (signal %v)\nstdout:\n%s\nstderr:\n%s", r.Args, r.Code, r.Signal, r.Stdout, r.Stderr)
}

// Block is the settle block of stderr: its airlock.key=value lines, keyed
// without the prefix; nil when there is none. A line with the prefix and
// no '=', or a key given twice, is an error (the map then holds the lines
// read well), so that a garbled block fails the test reading it. A command
// that prints several blocks (land) is read with Blocks.
func (r Result) Block() (map[string]string, error) {
	var block map[string]string
	var errs []error
	for _, line := range strings.Split(r.Stderr, "\n") {
		rest, ok := strings.CutPrefix(line, "airlock.")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("block line without '=': %q", line))
			continue
		}
		if block == nil {
			block = map[string]string{}
		}
		if _, dup := block[k]; dup {
			errs = append(errs, fmt.Errorf("block key %q appears twice", k))
		}
		block[k] = v
	}
	if len(errs) > 0 {
		return block, fmt.Errorf("%w\nin:\n%s", errors.Join(errs...), r.Stderr)
	}
	return block, nil
}

// Blocks splits stderr's airlock.key=value lines into one block each
// airlock.tx line starts, for a command that settles several transactions
// (land).
func (r Result) Blocks() ([]map[string]string, error) {
	var blocks []map[string]string
	for _, line := range strings.Split(r.Stderr, "\n") {
		rest, ok := strings.CutPrefix(line, "airlock.")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(rest, "=")
		if k == "tx" {
			blocks = append(blocks, map[string]string{})
		}
		if len(blocks) == 0 {
			return nil, fmt.Errorf("airlock.%s before any airlock.tx line", k)
		}
		blocks[len(blocks)-1][k] = v
	}
	return blocks, nil
}

// Proc is a process a test started and may not have waited for yet. The
// test's cleanup kills it if it is still running.
type Proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	argv   []string
	limit  time.Duration
	ctx    context.Context
	cancel context.CancelFunc
	out    output
	err    output
	done   chan struct{} // closed when the process has ended
	res    Result
	// killed is set before the test's cleanup kills the process, whose
	// end is then no failure.
	killed atomic.Bool
}

// Start starts c, failing the test if it cannot.
func Start(t testing.TB, c Cmd) *Proc {
	t.Helper()
	limit := c.Timeout
	if limit == 0 {
		limit = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	p := &Proc{t: t, argv: c.argv(), limit: limit, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	p.cmd = c.Command(ctx)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %q: %v", p.argv, err)
	}
	go p.reap()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.killed.Store(true)
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// Run starts c and waits for it.
func Run(t testing.TB, c Cmd) Result {
	t.Helper()
	return Start(t, c).Wait()
}

// reap waits for the process and records how it ended. It reports a hang
// or a failed wait with Errorf, which, unlike Fatalf, any goroutine may
// call.
func (p *Proc) reap() {
	defer close(p.done)
	err := p.cmd.Wait()
	timedOut := p.ctx.Err() == context.DeadlineExceeded
	p.cancel()
	p.res = Result{Args: p.argv, Stdout: p.out.String(), Stderr: p.err.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		p.res.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.res.Signal = ws.Signal()
		}
	default:
		p.res.Code = -2
		p.res.Stderr += "\n(wait: " + err.Error() + ")"
		if !p.killed.Load() {
			p.t.Errorf("%q: %v", p.argv, err)
		}
	}
	if timedOut && !p.killed.Load() {
		p.t.Errorf("%q did not end within %v and was killed\n%s", p.argv, p.limit, p.res)
	}
}

// Wait waits for the process to end and returns how it ended.
func (p *Proc) Wait() Result {
	<-p.done
	return p.res
}

// Done is closed when the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Ended reports whether the process has ended.
func (p *Proc) Ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process (an error once it has ended).
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stdout is what the process has written to its stdout so far.
func (p *Proc) Stdout() string { return p.out.String() }

// Stderr is what the process has written to its stderr so far.
func (p *Proc) Stderr() string { return p.err.String() }

// output collects what a process writes to one stream, for the test to
// read while the process still writes.
type output struct {
	mu sync.Mutex
	b  []byte
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.b = append(o.b, p...)
	o.mu.Unlock()
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.b)
}

// Settled is how an airlock process that settles transactions ended: its
// Result and its settle block (Result.Block).
type Settled struct {
	Result
	Settle map[string]string
}

// WaitSettled waits for the process to end and reads its settle block; a
// garbled block fails the test.
func (p *Proc) WaitSettled() Settled {
	r := p.Wait()
	b, err := r.Block()
	if err != nil {
		p.t.Errorf("%q: %v", r.Args, err)
	}
	return Settled{r, b}
}
