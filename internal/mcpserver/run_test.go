package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/testbin"
)

// TestRunTool: the run tool runs a command in the open transaction's
// staged tree, where the project's own path leads where the system allows,
// returns how it ended with its output as the text content, and leaves the
// transaction open: what the command wrote is the change set commit lands.
func TestRunTool(t *testing.T) {
	w := newWorld(t, map[string]string{"src/main.txt": "main\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base}, &o)

	var r RunOutput
	res := w.call("run", map[string]any{"id": o.ID, "command": `pwd; cat main.txt; echo built > out.txt; echo note >&2; test "$AIRLOCK_TX" = ` + o.ID, "dir": "src"}, &r)
	wantDir := filepath.Join(o.Path, "src")
	if r.SamePath {
		wantDir = filepath.Join(w.base, "src")
	} else if r.Fallback == "" {
		t.Error("not at the project's path, and no fallback says why")
	}
	if got := text(res); r.ExitCode != 0 || r.Dir != wantDir || got != "exit 0\nstdout:\n"+wantDir+"\nmain\nstderr:\nnote\n" {
		t.Errorf("run: %+v, content %q", r, got)
	}
	var info airlock.Info
	w.call("status", map[string]any{"id": o.ID}, &info)
	if info.Status != airlock.StatusOpen || info.Added != 1 {
		t.Errorf("after run: %s with %d added, want open with out.txt added", info.Status, info.Added)
	}
	if testbin.Exists(filepath.Join(w.base, "src/out.txt")) {
		t.Fatal("run wrote the base")
	}

	// A failing command is a result the model reads, not a tool error.
	res = w.callRaw("run", map[string]any{"id": o.ID, "command": "echo FAIL: TestX; exit 1"})
	decode(t, res, &r)
	if res.IsError || r.ExitCode != 1 || !strings.Contains(text(res), "FAIL: TestX") {
		t.Errorf("a failing command: error %v, %+v, %q", res.IsError, r, text(res))
	}

	var s SettleOutput
	w.call("commit", map[string]any{"id": o.ID}, &s)
	if s.Outcome != "committed" || readFile(t, filepath.Join(w.base, "src/out.txt")) != "built\n" {
		t.Fatalf("commit after run: %+v", s)
	}
	res = w.callRaw("run", map[string]any{"id": o.ID, "command": "true"})
	if !res.IsError || !strings.Contains(text(res), "committed") || !strings.Contains(text(res), "open a new transaction") {
		t.Errorf("run in a committed transaction: error %v %q, want a tool error saying so and what to do", res.IsError, text(res))
	}
}

// TestRunToolBounds: the timeout ends the command, the output is cut to
// its first and last halves with the cut said, and bad arguments are tool
// errors naming them.
func TestRunToolBounds(t *testing.T) {
	w := newWorld(t, map[string]string{"f": "f\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base}, &o)
	start := time.Now()
	var r RunOutput
	res := w.call("run", map[string]any{"id": o.ID, "command": "echo started; exec sleep 600", "timeout_seconds": 1}, &r)
	if !r.TimedOut || r.ExitCode != 128+int(syscall.SIGTERM) || !strings.Contains(text(res), "timeout") || !strings.Contains(text(res), "started") {
		t.Errorf("timeout: %+v %q", r, text(res))
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("a 1 s timeout returned after %v", d)
	}
	res = w.call("run", map[string]any{"id": o.ID, "command": `printf A; head -c 99998 /dev/zero | tr '\0' x; printf Z`}, &r)
	got := text(res)
	if r.StdoutCut != 100000-runOutputLimit || !strings.HasPrefix(got, "exit 0\nstdout:\nAxxx") || !strings.HasSuffix(got, "xxxZ") || !strings.Contains(got, "[… 83616 bytes cut …]") {
		t.Errorf("bounded output: cut %d, %d bytes of content", r.StdoutCut, len(got))
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"id": o.ID, "command": ""}, "command"},
		{map[string]any{"id": o.ID, "command": "true", "timeout_seconds": 99999}, "timeout_seconds"},
		{map[string]any{"id": o.ID, "command": "true", "dir": "../x"}, "../x"},
		{map[string]any{"id": "nope", "command": "true"}, "nope"},
	} {
		if res := w.callRaw("run", tc.args); !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("run %v: error %v %q, want a tool error naming %q", tc.args, res.IsError, text(res), tc.want)
		}
	}
}

// TestRunToolKeepsCommitsOut: a commit or discard while a run in the
// transaction is in flight is refused, and lands once the run returned.
// The run is held at a FIFO, its start seen by a file it writes.
func TestRunToolKeepsCommitsOut(t *testing.T) {
	w := newWorld(t, map[string]string{"f": "f\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base}, &o)
	outside := t.TempDir()
	gate, started := filepath.Join(outside, "gate"), filepath.Join(outside, "started")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := w.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"id": o.ID, "command": "echo new > new.txt; : > " + started + "; read x < " + gate}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	if err := testbin.WaitFile(started, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"commit", "discard"} {
		if res := w.callRaw(tool, map[string]any{"id": o.ID}); !res.IsError || !strings.Contains(text(res), "run call") {
			t.Errorf("%s during a run: error %v %q, want refused naming the run", tool, res.IsError, text(res))
		}
	}
	if err := os.WriteFile(gate, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	var r RunOutput
	if res := <-done; res.IsError {
		t.Fatalf("the run: %s", text(res))
	} else if decode(t, res, &r); r.ExitCode != 0 {
		t.Fatalf("the run: %+v", r)
	}
	var s SettleOutput
	w.call("commit", map[string]any{"id": o.ID}, &s)
	if s.Outcome != "committed" || readFile(t, filepath.Join(w.base, "new.txt")) != "new\n" {
		t.Errorf("commit after the run: %+v", s)
	}
}
