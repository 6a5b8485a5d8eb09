package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/testbin"
)

// An outside review of Tx.Exec and the MCP server's run tool: each test
// drives the real binary (`airlock mcp` over stdio, `airlock commit`) the
// way an agent, or a process of the same user, could, and checks one of
// the guarantees run makes: whatever a command leaves running ends before
// run returns, the timeout and output bounds hold, the command writes
// neither the state root nor another transaction's tree, and a commit
// applies exactly what it checked. The attacks that break a guarantee
// today are in e2e_attack7_breaks_test.go (airlock_known_breaks).

// mcpSession is one `airlock mcp` server on a scenario's state root, with
// the SDK's client connected to it over stdio.
type mcpSession struct {
	t      *testing.T
	cs     *mcp.ClientSession
	stderr *strings.Builder
}

// serveMCP starts `airlock mcp` in the base with the scenario's
// environment and extra variables (a pause point).
func (x *h) serveMCP(env ...string) *mcpSession {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(x.t.Context(), 2*commandTimeout)
	x.t.Cleanup(cancel)
	cmd := testbin.Cmd{Bin: airlockBin, Args: []string{"mcp"}, Dir: x.base, Env: x.environ(env...)}.Command(ctx)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "attack7", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		x.t.Fatalf("connect to airlock mcp: %v\n%s", err, stderr)
	}
	x.t.Cleanup(func() { cs.Close() })
	return &mcpSession{t: x.t, cs: cs, stderr: stderr}
}

// toolResult is a tool call's result as a model would read it.
type toolResult struct {
	out   map[string]any
	text  string
	isErr bool
}

// call calls a tool; a protocol error (not a tool error) fails the test.
func (s *mcpSession) call(name string, args map[string]any) toolResult {
	s.t.Helper()
	r, err := s.callErr(name, args)
	if err != nil {
		s.t.Fatalf("%s %v: %v\nserver stderr:\n%s", name, args, err, s.stderr)
	}
	return r
}

func (s *mcpSession) callErr(name string, args map[string]any) (toolResult, error) {
	ctx, cancel := context.WithTimeout(s.t.Context(), 2*commandTimeout)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return toolResult{}, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	out, _ := res.StructuredContent.(map[string]any)
	return toolResult{out: out, text: b.String(), isErr: res.IsError}, nil
}

// open opens a transaction over the scenario's base and returns its id
// and staged path.
func (s *mcpSession) open(args map[string]any) (id, staged string) {
	s.t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	args["path"] = "."
	r := s.call("open", args)
	if r.isErr {
		s.t.Fatalf("open: %s", r.text)
	}
	return r.out["id"].(string), r.out["path"].(string)
}

// run calls the run tool and fails the test on a tool error.
func (s *mcpSession) run(id, command string, extra map[string]any) toolResult {
	s.t.Helper()
	args := map[string]any{"id": id, "command": command}
	for k, v := range extra {
		args[k] = v
	}
	r := s.call("run", args)
	if r.isErr {
		s.t.Fatalf("run %q: tool error %s\nserver stderr:\n%s", command, r.text, s.stderr)
	}
	return r
}

// exitCode is a run result's exit_code.
func (r toolResult) exitCode() int {
	n, _ := r.out["exit_code"].(float64)
	return int(n)
}

// attackTag is a word no other process on the machine has in its
// argument list, by which a test finds what a command left running.
func attackTag(t *testing.T, what string) string {
	tag := fmt.Sprintf("attack7-%s-%d-%d", what, os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { killAll(tag) })
	return tag
}

// TestAttack7RunEndsDaemonsBeforeReturning: a command that daemonizes
// every way a shell can (setsid, a double fork, nohup, bash's disown, a
// process ignoring SIGHUP and SIGTERM in its own session) and exits at
// once leaves nothing running once run has returned: no process of it is
// left on the machine, run's ended names what was ended, and the staged
// tree no longer changes.
func TestAttack7RunEndsDaemonsBeforeReturning(t *testing.T) {
	x := newH(t)
	x.needContain()
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	out := testbin.RealDir(t)
	tag := attackTag(t, "daemon")
	s := x.serveMCP()
	id, staged := s.open(nil)
	// Each daemon says it runs by a file outside the tree, then writes the
	// tree forever; the command exits only once all five run.
	loop := `trap "" HUP TERM INT; : > ` + out + `/$1; while :; do echo x >> $1.txt; sleep 0.05; done`
	cmd := strings.Join([]string{
		`setsid sh -c '` + loop + `' ` + tag + ` setsid &`,
		`( sh -c '` + loop + `' ` + tag + ` dfork & ) &`,
		`nohup sh -c '` + loop + `' ` + tag + ` nohup >/dev/null 2>&1 &`,
		`bash -c 'sh -c '\''` + loop + `'\'' ` + tag + ` disown & disown' &`,
		`setsid sh -c 'exec 0<&- 1>&- 2>&-; ` + loop + `' ` + tag + ` closed &`,
		`for d in setsid dfork nohup disown closed; do while [ ! -e ` + out + `/$d ]; do sleep 0.01; done; done`,
		`echo all-started`,
	}, "\n")
	r := s.run(id, cmd, map[string]any{"timeout_seconds": 60})
	if r.exitCode() != 0 || r.out["timed_out"] == true || !strings.Contains(r.text, "all-started") {
		t.Fatalf("the daemonizing command: %v %q", r.out, r.text)
	}
	if left := runningWith(tag); len(left) > 0 {
		t.Errorf("processes the command left run on after run returned: %v", left)
	}
	if ended, _ := r.out["ended"].([]any); len(ended) < 5 {
		t.Errorf("run's ended names %d processes, want the 5 daemons at least: %v", len(ended), r.out["ended"])
	}
	before := snapshot(t, staged, nil)
	// Nothing of the command is left, so a second command that runs to its
	// end sees the tree as the first left it.
	s.run(id, "true", nil)
	wantTree(t, "the staged tree after run returned", before, snapshot(t, staged, nil))
}

// TestAttack7TimeoutEndsSignalIgnoringChild: a command whose child
// ignores SIGTERM in a session of its own is ended at its timeout all the
// same: run returns timed_out, with the output written before, and no
// process of it is left. (A command that itself ignores SIGTERM: see
// TestKnownBreakAttack7TimeoutOfSIGTERMIgnorerIsAToolError.)
func TestAttack7TimeoutEndsSignalIgnoringChild(t *testing.T) {
	x := newH(t)
	x.needContain()
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	tag := attackTag(t, "ignorer")
	s := x.serveMCP()
	id, _ := s.open(nil)
	start := time.Now()
	r := s.run(id, `setsid sh -c 'trap "" TERM INT HUP; while :; do sleep 0.05; done' `+tag+` & echo armed; while :; do sleep 0.05; done`,
		map[string]any{"timeout_seconds": 1})
	if r.out["timed_out"] != true || !strings.Contains(r.text, "armed") || !strings.Contains(r.text, "timeout") {
		t.Errorf("a command past its timeout: %v %q", r.out, r.text)
	}
	if code := r.exitCode(); code != 128+int(syscall.SIGKILL) && code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d, want death by SIGTERM or SIGKILL", code)
	}
	if d := time.Since(start); d > commandTimeout {
		t.Errorf("a 1 s timeout returned after %v", d)
	}
	if left := runningWith(tag); len(left) > 0 {
		t.Errorf("the signal-ignoring child runs on after the timeout: %v", left)
	}
}

// TestAttack7OutputFloodBounded: a command that floods both streams (20
// MB each), while a process it left in a session of its own holds both
// open, returns as soon as the command exits, with each stream cut to
// its first and last 8 KiB and the cut counted exactly.
func TestAttack7OutputFloodBounded(t *testing.T) {
	x := newH(t)
	x.needContain()
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	tag := attackTag(t, "holder")
	s := x.serveMCP()
	id, _ := s.open(nil)
	const n = 20 << 20
	start := time.Now()
	r := s.run(id, fmt.Sprintf(`setsid sh -c 'while :; do sleep 1; done' %s &
printf A; head -c %d /dev/zero | tr '\0' o; printf Z
printf B >&2; head -c %d /dev/zero | tr '\0' e >&2; printf Y >&2`, tag, n-2, n-2), map[string]any{"timeout_seconds": 600})
	if r.exitCode() != 0 || r.out["timed_out"] == true {
		t.Fatalf("the flood: %v", r.out)
	}
	if d := time.Since(start); d > commandTimeout {
		t.Errorf("run returned %v after it started: the left process's hold on the streams kept it", d)
	}
	const limit = 16 << 10
	for _, k := range []string{"stdout_cut", "stderr_cut"} {
		if got, _ := r.out[k].(float64); int64(got) != n-limit {
			t.Errorf("%s %v, want %d", k, r.out[k], n-limit)
		}
	}
	if len(r.text) > 2*limit+200 {
		t.Errorf("%d bytes of content for %d bytes of output: not bounded", len(r.text), 2*n)
	}
	for _, want := range []string{"stdout:\nAooo", "oooZ", "stderr:\nBeee", "eeeY"} {
		if !strings.Contains(r.text, want) {
			t.Errorf("the content lacks %q", want)
		}
	}
	if left := runningWith(tag); len(left) > 0 {
		t.Errorf("the stream holder runs on: %v", left)
	}
}

// TestAttack7ClosedStdoutIsNotTheEnd: a command that closes its stdout
// and stderr and goes on working is waited for to its exit, not to the
// end of its output: what it writes after (held at a FIFO until the test
// opens it) is in the change set when run returns.
func TestAttack7ClosedStdoutIsNotTheEnd(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	out := testbin.RealDir(t)
	gate := filepath.Join(out, "gate")
	must(t, syscall.Mkfifo(gate, 0o600))
	s := x.serveMCP()
	id, staged := s.open(nil)
	done := make(chan toolResult, 1)
	go func() {
		r, err := s.callErr("run", map[string]any{"id": id, "command": "echo early; exec 1>&- 2>&-; read x < " + gate + "; echo late > late.txt; exit 3"})
		if err != nil {
			r = toolResult{isErr: true, text: err.Error()}
		}
		done <- r
	}()
	// Opening the FIFO for writing waits for the command to open it: by
	// then its streams are closed.
	must(t, os.WriteFile(gate, []byte("go\n"), 0))
	r := <-done
	if r.isErr || r.exitCode() != 3 || !strings.Contains(r.text, "early") {
		t.Fatalf("run: %v %q", r.out, r.text)
	}
	if got := testbin.ReadFile(t, filepath.Join(staged, "late.txt")); got != "late\n" {
		t.Errorf("late.txt %q when run returned", got)
	}
}

// TestAttack7NonUTF8OutputArrives: bytes that are not UTF-8 on either
// stream, and a cut in the middle of a multi-byte character, reach the
// client as valid text with the bytes around them intact.
func TestAttack7NonUTF8OutputArrives(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	s := x.serveMCP()
	id, _ := s.open(nil)
	r := s.run(id, `printf 'head\377\376tail\n'; printf 'err\300\n' >&2; printf x; head -c 30000 /dev/zero | tr '\0' '\303' >&2`, nil)
	if !utf8.ValidString(r.text) {
		t.Fatalf("content is not UTF-8: %q", r.text)
	}
	for _, want := range []string{"head\ufffd\ufffdtail", "err\ufffd"} {
		if !strings.Contains(r.text, want) {
			t.Errorf("the content lacks %q: %q", want, r.text[:min(len(r.text), 200)])
		}
	}
	// A second call proves the server is still answering.
	if r := s.run(id, "echo alive", nil); !strings.Contains(r.text, "alive") {
		t.Errorf("after non-UTF-8 output: %q", r.text)
	}
}

// TestAttack7TimeoutArgumentBounds: timeout_seconds 0 is the default (a
// command runs to its end, not ended at once); negative, above the
// maximum, absurdly large, fractional or a string is refused, naming it,
// before anything runs, and the server goes on answering.
func TestAttack7TimeoutArgumentBounds(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	out := testbin.RealDir(t)
	s := x.serveMCP()
	id, _ := s.open(nil)
	if r := s.run(id, "sleep 0.2; echo done", map[string]any{"timeout_seconds": 0}); r.exitCode() != 0 || r.out["timed_out"] == true || !strings.Contains(r.text, "done") {
		t.Errorf("timeout_seconds 0: %v %q", r.out, r.text)
	}
	for _, v := range []any{-1, 3601, 1 << 40, 1e30, 1.5, "10", -9223372036854775808} {
		ran := filepath.Join(out, "ran")
		r, err := s.callErr("run", map[string]any{"id": id, "command": ": > " + ran, "timeout_seconds": v})
		switch {
		case err == nil && !r.isErr:
			t.Errorf("timeout_seconds %v was taken: %v", v, r.out)
		case err == nil && !strings.Contains(r.text, "timeout_seconds"):
			t.Errorf("timeout_seconds %v: refused without naming it: %q", v, r.text)
		}
		if testbin.Exists(ran) {
			t.Errorf("timeout_seconds %v: the command ran", v)
			os.Remove(ran)
		}
	}
	if r := s.run(id, "echo alive", nil); !strings.Contains(r.text, "alive") {
		t.Errorf("after bad timeouts: %q", r.text)
	}
}

// TestAttack7DirOutsideTreeRefused: a start directory that leads out of
// the staged tree by its name (.., an absolute path, a path through ..)
// is refused naming it, and nothing runs.
func TestAttack7DirOutsideTreeRefused(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n"), "sub/b.txt": F(0o644, "b\n")})
	out := testbin.RealDir(t)
	s := x.serveMCP()
	id, _ := s.open(nil)
	for _, dir := range []string{"..", "../", "../x", "sub/../..", "sub/../../x", "/", "/etc", out, "./../" + filepath.Base(x.base)} {
		ran := filepath.Join(out, "ran")
		r := s.call("run", map[string]any{"id": id, "command": ": > " + ran, "dir": dir})
		if !r.isErr || !strings.Contains(r.text, dir) {
			t.Errorf("dir %q: error %v %q, want a tool error naming it", dir, r.isErr, r.text)
		}
		if testbin.Exists(ran) {
			t.Errorf("dir %q: the command ran", dir)
			os.Remove(ran)
		}
	}
}

// TestAttack7RunAfterSettleRunsNothing: once the transaction is committed
// or discarded, run is a tool error that says so and what to do, and the
// command is not started at all.
func TestAttack7RunAfterSettleRunsNothing(t *testing.T) {
	for _, settle := range []string{"commit", "discard"} {
		t.Run(settle, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
			out := testbin.RealDir(t)
			s := x.serveMCP()
			id, staged := s.open(nil)
			writeFile(t, filepath.Join(staged, "a.txt"), "b\n")
			if r := s.call(settle, map[string]any{"id": id}); r.isErr {
				t.Fatalf("%s: %s", settle, r.text)
			}
			ran := filepath.Join(out, "ran")
			r := s.call("run", map[string]any{"id": id, "command": ": > " + ran + "; echo x > new.txt"})
			if !r.isErr || !strings.Contains(r.text, "open a new transaction") {
				t.Errorf("run after %s: error %v %q", settle, r.isErr, r.text)
			}
			if testbin.Exists(ran) {
				t.Errorf("run after %s started the command", settle)
			}
			if testbin.Exists(filepath.Join(x.base, "new.txt")) {
				t.Errorf("run after %s wrote the base", settle)
			}
		})
	}
}

// TestAttack7CommandCannotWriteStateOrOtherTree: a command of one
// transaction, told the paths, cannot write the state root, another open
// transaction's staged tree, nor reach that tree through a start directory
// that is a symlink to it; the other transaction's change set stays
// empty.
func TestAttack7CommandCannotWriteStateOrOtherTree(t *testing.T) {
	x := newH(t)
	x.needContain()
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	s := x.serveMCP()
	id, staged := s.open(nil)
	other, otherStaged := s.open(nil)
	must(t, os.Symlink(otherStaged, filepath.Join(staged, "other")))
	must(t, os.Symlink(x.state, filepath.Join(staged, "state")))
	for _, c := range []struct{ cmd, dir string }{
		{"echo pwned > " + otherStaged + "/a.txt; echo pwned > " + otherStaged + "/new.txt", ""},
		{"echo pwned > " + x.state + "/pwned; mkdir " + x.state + "/tx/" + other + "/pwned", ""},
		{"echo pwned > a.txt; echo pwned > new.txt", "other"},
		{"echo pwned > pwned", "state"},
	} {
		r := s.call("run", map[string]any{"id": id, "command": c.cmd, "dir": c.dir})
		if !r.isErr && r.exitCode() == 0 {
			t.Errorf("%q in %q: exit 0: %q", c.cmd, c.dir, r.text)
		}
	}
	if r := s.call("status", map[string]any{"id": other}); r.out["added"] != 0.0 || r.out["modified"] != 0.0 {
		t.Errorf("the other transaction's change set: %v", r.out)
	}
	if testbin.ReadFile(t, filepath.Join(otherStaged, "a.txt")) != "a\n" || testbin.Exists(filepath.Join(x.state, "pwned")) {
		t.Error("a command wrote another transaction's tree or the state root")
	}
}

// TestAttack7HandedDescriptorLandsNothingUnchecked: a command hands a
// descriptor of its working directory (the staged tree) over a unix
// socket to a process outside its namespace (the test) and exits. That
// process writes through it after the commit's checks (held at the pause
// point checked): the base gets exactly the checked change set, and the
// file it added does not land. Once settled, the tree is not another
// transaction's: a write through the descriptor reaches no open tree.
func TestAttack7HandedDescriptorLandsNothingUnchecked(t *testing.T) {
	x := newH(t)
	x.needContain()
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	backdate(t, x.base, time.Hour)
	pause := testbin.RealDir(t)
	s := x.serveMCP("AIRLOCK_TEST_PAUSE=checked:" + pause)
	id, staged := s.open(nil)
	writeFile(t, filepath.Join(staged, "one.txt"), "one\n")
	dirfd := receiveDirFD(t, func(sock string) {
		if r := s.run(id, "exec"+quotedArgv(partCommand("fd-giver", sock)), nil); r.exitCode() != 0 {
			t.Fatalf("the giver: %v %q", r.out, r.text)
		}
	})
	done := make(chan toolResult, 1)
	go func() {
		r, err := s.callErr("commit", map[string]any{"id": id})
		if err != nil {
			r = toolResult{isErr: true, text: err.Error()}
		}
		done <- r
	}()
	waitFile(t, filepath.Join(pause, "reached"))
	if !writeAt(dirfd, "one.txt", "evil\n") || !writeAt(dirfd, "sneak.txt", "sneak\n") {
		t.Fatal("the handed descriptor could not write the staged tree before the commit applied")
	}
	must(t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o600))
	r := <-done
	if r.isErr {
		t.Fatalf("commit: %s", r.text)
	}
	if r.out["outcome"] == "committed" && testbin.ReadFile(t, filepath.Join(x.base, "one.txt")) != "one\n" {
		t.Errorf("committed, and the base's one.txt is %q, not the checked %q", testbin.ReadFile(t, filepath.Join(x.base, "one.txt")), "one\n")
	}
	if testbin.Exists(filepath.Join(x.base, "sneak.txt")) {
		t.Error("a file written after the checks landed unchecked")
	}
	id2, staged2 := s.open(nil)
	writeAt(dirfd, "leak.txt", "leak\n")
	if testbin.Exists(filepath.Join(staged2, "leak.txt")) {
		t.Errorf("a write through the settled tree's descriptor reached %s's tree", id2)
	}
}

// writeAt writes name under the directory dirfd, and reports whether it
// could.
func writeAt(dirfd int, name, content string) bool {
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	n, err := unix.Write(fd, []byte(content))
	return err == nil && n == len(content)
}

// quotedArgv is argv as words of a shell command line, each quoted
// (none of the test binary's arguments holds a quote).
func quotedArgv(argv []string) string {
	var b strings.Builder
	for _, a := range argv {
		b.WriteString(" '" + a + "'")
	}
	return b.String()
}

// receiveDirFD listens on an abstract unix socket, lets give start what
// connects to it (fdGiver), and returns the directory descriptor it
// hands over: this process is the one outside the command's namespace.
func receiveDirFD(t *testing.T, give func(sock string)) int {
	t.Helper()
	sock := fmt.Sprintf("attack7-fd-%d-%d", os.Getpid(), time.Now().UnixNano())
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(l) })
	must(t, unix.Bind(l, &unix.SockaddrUnix{Name: "@" + sock}))
	must(t, unix.Listen(l, 1))
	got := make(chan int, 1)
	go func() {
		fd := -1
		defer func() { got <- fd }()
		c, _, err := unix.Accept(l)
		if err != nil {
			return
		}
		defer unix.Close(c)
		oob := make([]byte, unix.CmsgSpace(4))
		_, oobn, _, _, err := unix.Recvmsg(c, make([]byte, 1), oob, 0)
		if err != nil {
			return
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			return
		}
		unix.Write(c, []byte("k"))
		fd = fds[0]
	}()
	give(sock)
	fd := <-got
	if fd < 0 {
		t.Fatal("no descriptor arrived over the socket")
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// The four attacks below broke the run tool as first built; each is fixed
// and holds now.

// TestAttack7TimeoutOfSIGTERMIgnorerIsAResult: a command that itself
// ignores SIGTERM is killed at its timeout, after the grace, and run
// answers with a timed_out result holding what it wrote, not a tool error.
func TestAttack7TimeoutOfSIGTERMIgnorerIsAResult(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	s := x.serveMCP()
	id, _ := s.open(nil)
	r := s.call("run", map[string]any{"id": id, "command": `trap "" TERM; echo armed; while :; do sleep 0.05; done`, "timeout_seconds": 1})
	if r.isErr || r.out["timed_out"] != true || !strings.Contains(r.text, "armed") || r.exitCode() != 137 {
		t.Errorf("a command ignoring SIGTERM past its 1 s timeout: tool error %v, %v %q; want a timed_out result, exit 137, with its output", r.isErr, r.out, r.text)
	}
}

// TestAttack7RunDirSymlinkRefused: a dir that is a symlink in the staged
// tree to a directory outside it is refused, naming it; nothing runs.
func TestAttack7RunDirSymlinkRefused(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	outside := testbin.RealDir(t)
	s := x.serveMCP()
	id, staged := s.open(nil)
	must(t, os.Symlink(outside, filepath.Join(staged, "link")))
	must(t, os.MkdirAll(filepath.Join(staged, "sub"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(staged, "sub", "deeper")))
	for _, dir := range []string{"link", "sub/deeper", "link/x"} {
		r := s.call("run", map[string]any{"id": id, "command": "echo x > written.txt", "dir": dir})
		if !r.isErr || !strings.Contains(r.text, "symlink") {
			t.Errorf("dir %q (through a symlink to %s): want a tool error naming the symlink, got %v %v %q", dir, outside, r.isErr, r.out, r.text)
		}
	}
	if testbin.Exists(filepath.Join(outside, "written.txt")) {
		t.Error("a command started outside the staged tree")
	}
	if r := s.call("run", map[string]any{"id": id, "command": "pwd -P", "dir": "sub"}); r.isErr || r.exitCode() != 0 {
		t.Errorf("dir sub, a real directory: %v %v %q", r.isErr, r.out, r.text)
	}
}

// TestAttack7CommitElsewhereDuringRunRefused: a commit from the command
// line, or from a second `airlock mcp` on the same state root, while a run
// is in flight is refused at once, naming the command (the run holds the
// transaction's lock); once the run ends, a commit lands every write the
// command made, the one after the refused commit included.
func TestAttack7CommitElsewhereDuringRunRefused(t *testing.T) {
	for _, by := range []string{"cli", "second-mcp"} {
		t.Run(by, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
			out := testbin.RealDir(t)
			gate, started := filepath.Join(out, "gate"), filepath.Join(out, "started")
			must(t, syscall.Mkfifo(gate, 0o600))
			s := x.serveMCP()
			id, _ := s.open(nil)
			done := make(chan toolResult, 1)
			go func() {
				r, err := s.callErr("run", map[string]any{"id": id, "command": "exec 3>>one.txt; echo one >&3; : > " + started + "; read x < " + gate + "; echo more >&3"})
				if err != nil {
					r = toolResult{isErr: true, text: err.Error()}
				}
				done <- r
			}()
			waitFile(t, started)
			switch by {
			case "cli":
				c := x.airlock("commit", id)
				if c.Code != 125 || !strings.Contains(c.Stderr, "has a command running") {
					t.Errorf("a commit from the command line during a run: exit %d, %s", c.Code, c.Stderr)
				}
			case "second-mcp":
				c := x.serveMCP().call("commit", map[string]any{"id": id})
				if !c.isErr || !strings.Contains(c.text, "has a command running") {
					t.Errorf("a commit from a second server during a run: %v %v %q", c.isErr, c.out, c.text)
				}
			}
			if testbin.Exists(filepath.Join(x.base, "one.txt")) {
				t.Fatal("a commit during the run landed")
			}
			must(t, os.WriteFile(gate, []byte("go\n"), 0))
			if r := <-done; r.isErr || r.exitCode() != 0 {
				t.Fatalf("the run: %v %v %q", r.isErr, r.out, r.text)
			}
			if c := s.call("commit", map[string]any{"id": id}); c.isErr || c.out["outcome"] != "committed" {
				t.Fatalf("the commit after the run: %v %v %q", c.isErr, c.out, c.text)
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "one.txt")); got != "one\nmore\n" {
				t.Errorf("the base's one.txt is %q, want both of the command's writes", got)
			}
		})
	}
}

// TestAttack7RunDuringCommitRefused: a run of a transaction whose commit
// (from the command line) is past its checks is refused at once, saying
// the transaction is being settled; the commit lands what it checked.
func TestAttack7RunDuringCommitRefused(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	pause := testbin.RealDir(t)
	s := x.serveMCP()
	id, staged := s.open(nil)
	writeFile(t, filepath.Join(staged, "one.txt"), "one\n")
	c := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", id}})
	waitFile(t, filepath.Join(pause, "reached"))
	r := s.call("run", map[string]any{"id": id, "command": "echo late > late.txt"})
	must(t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o600))
	res := c.WaitSettled()
	if !r.isErr || !strings.Contains(r.text, "being settled") {
		t.Errorf("run during a commit past its checks: %v %v %q; want a tool error saying it is being settled", r.isErr, r.out, r.text)
	}
	if res.Settle == nil || res.Settle["outcome"] != "committed" || testbin.Exists(filepath.Join(x.base, "late.txt")) {
		t.Errorf("the commit: %v; late.txt landed: %v", res.Settle, testbin.Exists(filepath.Join(x.base, "late.txt")))
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "one.txt")); got != "one\n" {
		t.Errorf("the base's one.txt is %q, not the checked %q", got, "one\n")
	}
}
