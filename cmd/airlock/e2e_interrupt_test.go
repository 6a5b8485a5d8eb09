package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/testbin"
)

// interruptible is a scenario whose project validator blocks until the
// test lets it pass: until the file pass exists, it starts a child that
// ignores SIGTERM (`sleep 1000`), writes the child's pid into the FIFO
// ready (which blocks until the test reads it: the handshake that says the
// validator is running) and waits for it.
type interruptible struct {
	*h
	ready, pass string
	// tag names the validator's child in its argument list: the pid it
	// writes is its PID namespace's (validators run contained).
	tag string
}

func newInterruptible(t *testing.T, cfg string) *interruptible {
	t.Helper()
	x := &interruptible{h: newH(t)}
	sync := testbin.RealDir(t)
	x.ready, x.pass = filepath.Join(sync, "ready"), filepath.Join(sync, "pass")
	x.tag = "airlock-validator-child-" + filepath.Base(filepath.Dir(sync)) + "-" + filepath.Base(sync)
	must(t, unix.Mkfifo(x.ready, 0o600))
	validate := `test -e ` + x.pass + ` || { (trap '' TERM; exec sh -c 'while :; do sleep 1; done' ` + x.tag + `) & echo $! > ` + x.ready + `; wait; }`
	build(t, x.base, tree{
		"a.txt":         F(0o644, "a\n"),
		".airlock.toml": F(0o644, "validate = "+strconv.Quote(validate)+"\n"+cfg),
	})
	return x
}

// validating waits until p's validator has written its child's pid (or p
// has ended, which fails the test) and returns a pidfd of that child.
func (x *interruptible) validating(done <-chan struct{}, describe func() string) int {
	x.t.Helper()
	got := make(chan []byte, 1)
	go func() {
		// Opening a FIFO for reading blocks until the validator opens it
		// for writing.
		b, _ := os.ReadFile(x.ready)
		got <- b
	}()
	var b []byte
	select {
	case b = <-got:
	case <-done:
		// Unblock the reader, then fail.
		if f, err := os.OpenFile(x.ready, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		x.t.Fatalf("airlock ended before its validator ran\n%s", describe())
	case <-time.After(commandTimeout):
		x.t.Fatalf("the validator did not start within %v\n%s", commandTimeout, describe())
	}
	if _, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		x.t.Fatalf("the validator wrote %q, not a pid", b)
	}
	// The child is started: it is found by its tag (once it has exec'd),
	// under the pid this namespace knows it by. Its loop forks to run
	// sleep, and until that fork execs it carries the tag too: the child
	// is the tagged process whose parent is not tagged.
	pids := eldest(runningWith(x.tag))
	for deadline := time.Now().Add(commandTimeout); len(pids) == 0 && time.Now().Before(deadline); pids = eldest(runningWith(x.tag)) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(pids) != 1 {
		x.t.Fatalf("processes tagged %s: %v, want the validator's child alone", x.tag, pids)
	}
	pid, _ := strconv.Atoi(pids[0])
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		x.t.Fatalf("pidfd of the validator's child %d: %v", pid, err)
	}
	x.t.Cleanup(func() {
		unix.Kill(pid, syscall.SIGKILL)
		unix.Close(fd)
	})
	return fd
}

// wantGone waits for the process of pidfd fd to end: a pidfd polls
// readable once its process has exited.
func wantGone(t *testing.T, fd int, what string) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(commandTimeout/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll the pidfd of %s: %v", what, err)
		}
		if n == 0 {
			t.Fatalf("%s is still running %v after airlock ended", what, commandTimeout)
		}
		return
	}
}

// wantUntouched checks that transaction id is exactly as before its
// interrupted commit: open, nothing refused or recorded as validated, no
// receipt, no candidate tree, the base as it was.
func (x *interruptible) wantUntouched(id string) {
	x.t.Helper()
	r := x.airlock("show", id, "--json")
	wantCode(x.t, r, 0)
	var info map[string]any
	must(x.t, json.Unmarshal([]byte(r.Stdout), &info))
	if info["status"] != "open" || info["refusal"] != nil && info["refusal"] != "" {
		x.t.Errorf("show after the interrupted commit: status %v, refusal %v; want open, none\n%s", info["status"], info["refusal"], r.Stdout)
	}
	dir := filepath.Join(x.state, "tx", id)
	events, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	must(x.t, err)
	for _, bad := range []string{"ValidationFailed", `"refused"`, `"validated"`} {
		if strings.Contains(string(events), bad) {
			x.t.Errorf("the event log records %s for a validator that was interrupted:\n%s", bad, events)
		}
	}
	for _, gone := range []string{"receipt.json", "candidate"} {
		if testbin.Exists(filepath.Join(dir, gone)) {
			x.t.Errorf("%s is there after the interrupted commit", gone)
		}
	}
	if got := testbin.ReadFile(x.t, filepath.Join(x.base, "a.txt")); got != "a\n" {
		x.t.Errorf("base a.txt is %q after the interrupted commit", got)
	}
}

// commitsLater lets the validator pass and commits id as if nothing had
// happened.
func (x *interruptible) commitsLater(id string) {
	x.t.Helper()
	touch(x.t, x.pass)
	r := x.airlock("commit", id)
	wantCode(x.t, r, 0)
	wantBlock(x.t, r, map[string]string{"tx": id, "outcome": "committed", "modified": "1"})
	if got := testbin.ReadFile(x.t, filepath.Join(x.base, "a.txt")); got != "b\n" {
		x.t.Errorf("base a.txt is %q after the later commit", got)
	}
}

// TestE2EValidatorInterrupted: a signal to airlock while a validator runs
// (Claude Code sends a SessionEnd hook SIGTERM after 1.5 s; a person
// presses Ctrl-C) is no verdict. The validator's whole process group ends
// — a child that ignores SIGTERM too — nothing is recorded (no
// ValidationFailed, no receipt), the candidate tree is removed, airlock
// exits 128+N saying the transaction is kept, and a later commit commits
// it as if nothing had happened.
func TestE2EValidatorInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		cfg  string
		// start starts the airlock that validates transaction t1.
		start func(x *interruptible) proc
	}{
		{"commit SIGTERM", syscall.SIGTERM, "", func(x *interruptible) proc {
			writeFile(x.t, filepath.Join(x.openTx("t1"), "a.txt"), "b\n")
			return x.start(run{args: []string{"commit", "t1"}, newSession: true})
		}},
		{"commit SIGINT", syscall.SIGINT, "", func(x *interruptible) proc {
			writeFile(x.t, filepath.Join(x.openTx("t1"), "a.txt"), "b\n")
			return x.start(run{args: []string{"commit", "t1"}, newSession: true})
		}},
		{"run SIGTERM", syscall.SIGTERM, "", func(x *interruptible) proc {
			return x.start(run{args: []string{"run", "--workdir", x.base, "--id", "t1", "--", "sh", "-c", "echo b > a.txt"}, newSession: true})
		}},
		{"land SIGTERM", syscall.SIGTERM, "", func(x *interruptible) proc {
			// Stopped at t1, the queue does not go on to t2 (whose
			// validator would block on the FIFO nobody reads again).
			writeFile(x.t, filepath.Join(x.openTx("t1"), "a.txt"), "b\n")
			writeFile(x.t, filepath.Join(x.openTx("t2"), "c.txt"), "c\n")
			return x.start(run{args: []string{"land", "t1", "t2"}, newSession: true})
		}},
		{"hook stop SIGTERM", syscall.SIGTERM, "", func(x *interruptible) proc {
			// The stop hook's check: stopped, it blocks the agent on
			// nothing and records no finding.
			staged := x.openTx("t1")
			writeFile(x.t, filepath.Join(staged, "a.txt"), "b\n")
			b, _ := json.Marshal(map[string]any{"session_id": "s-1", "cwd": staged, "hook_event_name": "Stop", "stop_hook_active": false})
			return testbin.Start(x.t, testbin.Cmd{Bin: airlockBin, Args: []string{"hook", "claude", "stop"}, Dir: staged,
				Stdin: string(b), Env: x.environ(), Timeout: commandTimeout, Setsid: true})
		}},
		{"hook session-end SIGTERM", syscall.SIGTERM, "[hooks]\nstop = \"commit\"\n", func(x *interruptible) proc {
			in := func(event, cwd string, kv ...string) string {
				m := map[string]string{"session_id": "s-1", "cwd": cwd, "hook_event_name": event}
				for i := 0; i+1 < len(kv); i += 2 {
					m[kv[i]] = kv[i+1]
				}
				b, _ := json.Marshal(m)
				return string(b)
			}
			r := testbin.Run(x.t, testbin.Cmd{Bin: airlockBin, Args: []string{"hook", "claude", "worktree-create"}, Dir: x.base,
				Stdin: in("WorktreeCreate", x.base, "name", "t1"), Env: x.environ(), Timeout: commandTimeout})
			if r.Code != 0 {
				x.t.Fatalf("worktree-create: %s", r)
			}
			staged := strings.TrimSpace(r.Stdout)
			writeFile(x.t, filepath.Join(staged, "a.txt"), "b\n")
			return testbin.Start(x.t, testbin.Cmd{Bin: airlockBin, Args: []string{"hook", "claude", "session-end"}, Dir: staged,
				Stdin: in("SessionEnd", staged, "reason", "other"), Env: x.environ(), Timeout: commandTimeout, Setsid: true})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newInterruptible(t, tc.cfg)
			p := tc.start(x)
			child := x.validating(p.Done(), func() string { return p.Stderr() })
			must(t, p.Signal(tc.sig))
			r := p.Wait()
			if r.Code != 128+int(tc.sig) {
				t.Errorf("airlock exited %d after %v while validating, want %d\n%s", r.Code, tc.sig, 128+int(tc.sig), r)
			}
			for _, want := range []string{"interrupted by " + unix.SignalName(tc.sig), "while validating", "transaction t1 is kept as it was", "airlock commit t1"} {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr does not say %q\n%s", want, r)
				}
			}
			if strings.Contains(r.Stderr, "ValidationFailed") || strings.HasPrefix(tc.name, "hook") && r.Stdout != "" {
				t.Errorf("an interrupted validator was reported as a verdict\n%s", r)
			}
			wantGone(t, child, "the validator's child that ignores SIGTERM")
			x.wantUntouched("t1")
			x.commitsLater("t1")
		})
	}
}

// TestE2EMCPCommitCancelledWhileValidating: an MCP client that cancels a
// commit call while the validator runs stops the validator with its whole
// process group, and the transaction is as it was: no verdict recorded,
// and the next commit lands.
func TestE2EMCPCommitCancelledWhileValidating(t *testing.T) {
	x := newInterruptible(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := testbin.Cmd{Bin: airlockBin, Args: []string{"mcp"}, Dir: x.base, Env: x.environ()}.Command(ctx)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "open", Arguments: map[string]any{"path": ".", "id": "t1"}})
	if err != nil || res.IsError {
		t.Fatalf("open: %v %v", err, res)
	}
	o, _ := res.StructuredContent.(map[string]any)
	writeFile(t, filepath.Join(o["path"].(string), "a.txt"), "b\n")

	callCtx, cancelCall := context.WithCancel(ctx)
	done := make(chan struct{})
	var callErr error
	go func() {
		defer close(done)
		_, callErr = cs.CallTool(callCtx, &mcp.CallToolParams{Name: "commit", Arguments: map[string]any{"id": "t1"}})
	}()
	child := x.validating(done, stderr.String)
	cancelCall()
	<-done
	if !errors.Is(callErr, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", callErr)
	}
	// The server stops the validator when the cancellation reaches it.
	wantGone(t, child, "the validator's child that ignores SIGTERM")
	// The server ends once its handlers have: the commit has given up.
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, stderr.String())
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("airlock mcp did not exit 0 when the client hung up: %v\n%s", cmd.ProcessState, stderr.String())
	}
	x.wantUntouched("t1")
	x.commitsLater("t1")
}

// TestE2EMCPServerInterruptedWhileValidating: SIGTERM to `airlock mcp`
// (a client shutting its servers down) while a commit validates stops the
// validator with its group, records no verdict, and ends the server with
// 143.
func TestE2EMCPServerInterruptedWhileValidating(t *testing.T) {
	x := newInterruptible(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := testbin.Cmd{Bin: airlockBin, Args: []string{"mcp"}, Dir: x.base, Env: x.environ(), Setsid: true}.Command(ctx)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "open", Arguments: map[string]any{"path": ".", "id": "t1"}})
	if err != nil || res.IsError {
		t.Fatalf("open: %v %v", err, res)
	}
	o, _ := res.StructuredContent.(map[string]any)
	writeFile(t, filepath.Join(o["path"].(string), "a.txt"), "b\n")

	done := make(chan struct{})
	var commit *mcp.CallToolResult
	go func() {
		defer close(done)
		commit, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "commit", Arguments: map[string]any{"id": "t1"}})
	}()
	child := x.validating(done, stderr.String)
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	<-done
	if commit != nil && !commit.IsError {
		t.Errorf("the interrupted commit returned a result: %+v", commit.StructuredContent)
	}
	wantGone(t, child, "the validator's child that ignores SIGTERM")
	cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 143 {
		t.Errorf("airlock mcp after SIGTERM: %v, want exit 143\n%s", cmd.ProcessState, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped by SIGTERM") {
		t.Errorf("stderr does not say the server stopped\n%s", stderr.String())
	}
	x.wantUntouched("t1")
	x.commitsLater("t1")
}

// eldest is pids without those whose parent is among them.
func eldest(pids []string) []string {
	var out []string
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 2 || !slices.Contains(pids, f[1]) {
			out = append(out, p)
		}
	}
	return out
}
