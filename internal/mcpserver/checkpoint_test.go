package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock/internal/jsonout"
	"github.com/airlockdev/airlock/internal/testbin"
)

// TestCheckpointRewindTools: checkpoint records the staged tree, a run
// command changes it, rewind puts it back (the diff is the checkpoint's
// again) and says which checkpoint holds what it replaced; rewinding to
// that one undoes the rewind. A checkpoint or rewind while a run is in
// flight is refused, and an unknown number is a tool error naming the
// ones there are.
func TestCheckpointRewindTools(t *testing.T) {
	w := newWorld(t, map[string]string{"f.txt": "f\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base}, &o)
	writeFiles(t, o.Path, map[string]string{"f.txt": "f edited\n"})
	var cp jsonout.Checkpoint
	w.call("checkpoint", map[string]any{"id": o.ID, "message": "edited"}, &cp)
	if cp.Number != 1 || cp.Modified != 1 || cp.Message != "edited" {
		t.Fatalf("checkpoint: %+v", cp)
	}
	var d DiffOutput
	at1 := text(w.call("diff", map[string]any{"id": o.ID}, &d))

	var r RunOutput
	w.call("run", map[string]any{"id": o.ID, "command": "rm f.txt; mkdir -p gen && echo x > gen/x.txt"}, &r)
	after := text(w.call("diff", map[string]any{"id": o.ID}, &d))

	var rw jsonout.Rewound
	w.call("rewind", map[string]any{"id": o.ID, "number": 1}, &rw)
	if rw.To.Number != 1 || rw.Saved.Number != 2 || rw.Saved.Auto != "rewind" {
		t.Errorf("rewind: %+v", rw)
	}
	if got := text(w.call("diff", map[string]any{"id": o.ID}, &d)); got != at1 {
		t.Errorf("after the rewind the diff is\n%s\nwant\n%s", got, at1)
	}
	w.call("rewind", map[string]any{"id": o.ID, "number": 2}, &rw)
	if got := text(w.call("diff", map[string]any{"id": o.ID}, &d)); got != after {
		t.Errorf("after rewinding the rewind the diff is\n%s\nwant\n%s", got, after)
	}
	if res := w.callRaw("rewind", map[string]any{"id": o.ID, "number": 9}); !res.IsError || !strings.Contains(text(res), "has no checkpoint 9: it has 1 to 3") {
		t.Errorf("rewind to 9: error %v %q", res.IsError, text(res))
	}

	outside := t.TempDir()
	gate, started := filepath.Join(outside, "gate"), filepath.Join(outside, "started")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"id": o.ID, "command": "echo more > more.txt; : > " + started + "; read x < " + gate}})
	}()
	if err := testbin.WaitFile(started, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		tool string
		args map[string]any
	}{{"checkpoint", map[string]any{"id": o.ID}}, {"rewind", map[string]any{"id": o.ID, "number": 1}}} {
		if res := w.callRaw(call.tool, call.args); !res.IsError || !strings.Contains(text(res), "has a command running in its staged workspace") {
			t.Errorf("%s during a run: error %v %q", call.tool, res.IsError, text(res))
		}
	}
	if err := os.WriteFile(gate, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	<-done
}
