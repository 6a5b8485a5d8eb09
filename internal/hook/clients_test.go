package hook_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/airlockdev/airlock/internal/testbin"
)

// fakeClaudeAPI is the Anthropic Messages API as Claude Code uses it
// (POST /v1/messages, stream: true, server-sent events), scripted: the
// model's n-th reply is the n-th of calls while calls remain, a tool use
// each, then a closing text. It records every tool_result Claude Code
// sends back, keyed by tool_use id.
type fakeClaudeAPI struct {
	calls []fakeToolUse
	mu    sync.Mutex
	next  int
	seen  map[string]toolResult
}

type fakeToolUse struct {
	name  string
	input map[string]any
}

type toolResult struct {
	Content any  `json:"content"`
	IsError bool `json:"is_error"`
}

func (f *fakeClaudeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []json.RawMessage `json:"tools"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	for _, m := range req.Messages {
		var blocks []struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			toolResult
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					f.seen[b.ToolUseID] = b.toolResult
				}
			}
		}
	}
	var block, delta map[string]any
	stop := "end_turn"
	if len(req.Tools) > 0 && f.next < len(f.calls) {
		c := f.calls[f.next]
		in, _ := json.Marshal(c.input)
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", f.next), "name": c.name, "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(in)}
		stop = "tool_use"
		f.next++
	} else {
		block = map[string]any{"type": "text", "text": ""}
		delta = map[string]any{"type": "text_delta", "text": "done"}
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range []map[string]any{
		{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-fake", "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}},
		{"type": "content_block_start", "index": 0, "content_block": block},
		{"type": "content_block_delta", "index": 0, "delta": delta},
		{"type": "content_block_stop", "index": 0},
		{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}},
		{"type": "message_stop"},
	} {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
	}
}

// TestClaudeCodeGuard drives the real Claude Code (npm
// @anthropic-ai/claude-code 2.1.197, which .ci/run installs) against a
// local fake of its API, in a transaction's staged workspace with the
// hooks `airlock init claude` wrote: the model asks to Write a base file,
// Bash a write into the base, and Write a staged file. Claude Code runs
// airlock's PreToolUse hook on each and must take its deny as one (the
// tool does not run; the reason comes back to the model as the tool's
// error) and its silence as no objection. This is the contract checked
// against the client itself: its PreToolUse output schema and the deny
// path (in the binary: hookSpecificOutput.permissionDecision "deny" with
// permissionDecisionReason), and that the settings init writes load.
func TestClaudeCodeGuard(t *testing.T) {
	claude := testbin.Require(t, "claude", "the PreToolUse guard is checked against the real Claude Code; .ci/run installs @anthropic-ai/claude-code from npm")
	w := newWorld(t, map[string]string{"a.txt": "base\n"})
	mustCode(t, w.run(w.base, "", nil, w.bin, "init", "claude"), 0)
	r := w.run(w.base, "", nil, w.bin, "open", "--id", "guarded")
	mustCode(t, r, 0)
	staged := strings.TrimSpace(strings.Split(strings.TrimSpace(r.Stdout), "\n")[1])
	api := &fakeClaudeAPI{seen: map[string]toolResult{}, calls: []fakeToolUse{
		// A new file: Claude Code refuses, before any hook, a Write to an
		// existing file its session has not read.
		{"Write", map[string]any{"file_path": filepath.Join(w.base, "new.txt"), "content": "agent\n"}},
		{"Bash", map[string]any{"command": "echo agent > " + filepath.Join(w.base, "b.txt")}},
		{"Write", map[string]any{"file_path": filepath.Join(staged, "c.txt"), "content": "agent\n"}},
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	r = w.run(staged, "", []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=sk-fake", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"},
		claude, "-p", "edit the files", "--output-format", "json", "--permission-mode", "acceptEdits")
	mustCode(t, r, 0)
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.next != 3 {
		t.Fatalf("the fake model made %d of its 3 tool calls\n%s", api.next, r)
	}
	for i, want := range []string{"airlock: Write denied: it writes " + filepath.Join(w.base, "new.txt"), "airlock: Bash denied: its command redirects output to " + filepath.Join(w.base, "b.txt")} {
		res, ok := api.seen[fmt.Sprintf("toolu_%d", i)]
		content := fmt.Sprint(res.Content)
		if !ok || !res.IsError || !strings.Contains(content, want) {
			t.Errorf("tool call %d: Claude Code sent back %+v, want an error carrying %q", i, res, want)
		}
	}
	if res := api.seen["toolu_2"]; res.IsError {
		t.Errorf("the staged Write was refused: %+v", res)
	}
	if testbin.Exists(filepath.Join(w.base, "new.txt")) || testbin.Exists(filepath.Join(w.base, "b.txt")) {
		t.Error("a denied call wrote the base")
	}
	if testbin.ReadFile(t, filepath.Join(staged, "c.txt")) != "agent\n" {
		t.Error("the allowed Write did not reach the staged workspace")
	}
}

// codexSchemas reads the hook JSON Schemas the installed Codex binary
// carries (Codex 0.171.0: "pre-tool-use.command.output" and the like, as
// pretty-printed draft-07 documents in the native binary under
// node_modules/@openai/codex-*/vendor/*/bin/codex), by title.
func codexSchemas(t *testing.T) map[string]*jsonschema.Resolved {
	t.Helper()
	codex := testbin.Require(t, "codex", "airlock's Codex hook answers are checked against the JSON Schemas in the installed Codex; .ci/run installs @openai/codex from npm")
	js, err := filepath.EvalSymlinks(codex)
	if err != nil {
		t.Fatal(err)
	}
	bins, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(js)), "node_modules", "@openai", "codex-*", "vendor", "*", "bin", "codex"))
	if len(bins) == 0 {
		t.Fatalf("no native codex binary beside %s", js)
	}
	data, err := os.ReadFile(bins[0])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Resolved{}
	marker := []byte(`"$schema": "http://json-schema.org/draft-07/schema#"`)
	for i := 0; ; {
		j := bytes.Index(data[i:], marker)
		if j < 0 {
			break
		}
		start := bytes.LastIndexByte(data[:i+j], '{')
		i += j + len(marker)
		var s jsonschema.Schema
		if err := json.NewDecoder(bytes.NewReader(data[start:])).Decode(&s); err != nil || !strings.HasSuffix(s.Title, ".command.output") && !strings.HasSuffix(s.Title, ".command.input") {
			continue
		}
		res, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("schema %s: %v", s.Title, err)
		}
		out[s.Title] = res
	}
	return out
}

// TestCodexHookSchemas: each answer airlock gives Codex validates against
// the installed Codex's own output schema for its event, and the input
// Codex documents for SessionEnd and PreToolUse is one airlock reads.
func TestCodexHookSchemas(t *testing.T) {
	schemas := codexSchemas(t)
	for _, title := range []string{"pre-tool-use.command.input", "pre-tool-use.command.output", "session-end.command.input", "stop.command.output", "subagent-stop.command.output", "session-start.command.output"} {
		if schemas[title] == nil {
			t.Fatalf("the installed Codex has no %s schema", title)
		}
	}
	// The schemas judge: Codex's PreToolUse takes "approve" or "block" as
	// a top-level decision, not Gemini's "deny".
	if err := schemas["pre-tool-use.command.output"].Validate(map[string]any{"decision": "deny"}); err == nil {
		t.Fatal(`pre-tool-use.command.output accepts {"decision":"deny"}: the schema was not read as Codex has it`)
	}
	valid := func(title string, v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		var inst any
		if err := json.Unmarshal(b, &inst); err != nil {
			t.Fatal(err)
		}
		if err := schemas[title].Validate(inst); err != nil {
			t.Errorf("%s rejects %s: %v", title, b, err)
		}
	}
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	r := w.run(w.base, "", nil, w.bin, "open", "--id", "cx")
	mustCode(t, r, 0)
	staged := strings.TrimSpace(strings.Split(strings.TrimSpace(r.Stdout), "\n")[1])

	pre := func(tool string, input map[string]any) map[string]any {
		in := map[string]any{"session_id": "s-1", "turn_id": "t-1", "transcript_path": nil, "cwd": staged, "hook_event_name": "PreToolUse",
			"model": "gpt-5-codex", "permission_mode": "default", "tool_name": tool, "tool_input": input, "tool_use_id": "call_1"}
		valid("pre-tool-use.command.input", in)
		return in
	}
	for _, c := range []struct {
		name  string
		in    map[string]any
		allow bool
	}{
		{"deny", pre("Bash", map[string]any{"command": "rm " + filepath.Join(w.base, "a.txt")}), false},
		{"allow", pre("Bash", map[string]any{"command": "rm a.txt"}), true},
	} {
		r := w.hook("codex", "pre-tool-use", c.in)
		mustCode(t, r, 0)
		out := decode(t, r)
		valid("pre-tool-use.command.output", out)
		if c.allow != (len(out) == 0) {
			t.Errorf("%s: answer %v", c.name, out)
		}
	}
	r = w.hook("codex", "stop", codexStop(staged, false))
	mustCode(t, r, 0)
	valid("stop.command.output", decode(t, r))
	sub := codexStop(staged, false)
	sub["hook_event_name"], sub["agent_id"], sub["agent_type"] = "SubagentStop", "a-1", "worker"
	r = w.hook("codex", "subagent-stop", sub)
	mustCode(t, r, 0)
	valid("subagent-stop.command.output", decode(t, r))
	ss := map[string]any{"session_id": "s-1", "transcript_path": nil, "cwd": staged, "hook_event_name": "SessionStart", "model": "gpt-5-codex", "permission_mode": "default", "source": "startup"}
	valid("session-start.command.input", ss)
	r = w.hook("codex", "session-start", ss)
	mustCode(t, r, 0)
	valid("session-start.command.output", decode(t, r))

	// SessionEnd's output Codex ignores (it has no output schema). A
	// transaction no session of Codex's opened is not Codex's to settle.
	end := map[string]any{"session_id": "s-1", "transcript_path": nil, "cwd": staged, "hook_event_name": "SessionEnd", "reason": "other"}
	valid("session-end.command.input", end)
	r = w.hook("codex", "session-end", end)
	mustCode(t, r, 0)
	if w.status("cx") != "open" {
		t.Error("Codex's SessionEnd settled a transaction opened by hand")
	}
}
