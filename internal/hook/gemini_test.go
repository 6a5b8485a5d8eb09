package hook_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// fakeGeminiAPI is the Gemini API as Gemini CLI uses it with an API key
// (POST /v1beta/models/MODEL:streamGenerateContent?alt=sse, server-sent
// events of GenerateContentResponse), scripted: while calls remain, the
// model's answer to a request that offers tools is the next call, else the
// text "done". It keeps every request, in order.
type fakeGeminiAPI struct {
	calls []fakeToolUse
	mu    sync.Mutex
	next  int
	reqs  []geminiRequest
}

type geminiRequest struct {
	Contents []geminiContent  `json:"contents"`
	Tools    []map[string]any `json:"tools"`
}

type geminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text             string `json:"text"`
		FunctionResponse *struct {
			Name     string         `json:"name"`
			Response map[string]any `json:"response"`
		} `json:"functionResponse"`
	} `json:"parts"`
}

func (f *fakeGeminiAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req geminiRequest
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil || r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") {
		http.Error(w, fmt.Sprintf("the fake answers POST /v1beta/models/*, not %s %s (%v)", r.Method, r.URL, err), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	part := map[string]any{"text": "done"}
	if len(req.Tools) > 0 && f.next < len(f.calls) {
		c := f.calls[f.next]
		part = map[string]any{"functionCall": map[string]any{"name": c.name, "args": c.input}}
		f.next++
	}
	f.mu.Unlock()
	resp, _ := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"index": 0, "finishReason": "STOP", "content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		"modelVersion":  "gemini-2.5-flash",
	})
	if r.URL.Query().Get("alt") != "sse" {
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\r\n\r\n", resp)
}

// history is the conversation the last request carried, which Gemini CLI
// sends whole each time.
func (f *fakeGeminiAPI) history() []geminiContent {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		return nil
	}
	return f.reqs[len(f.reqs)-1].Contents
}

// geminiRun runs cmd (gemini, or a command that starts it) with gemini's
// non-interactive flags and args, in dir, against
// api, with a home whose user settings pick API-key auth (the base URL
// variable alone selects a "gateway" auth that headless mode refuses) and
// send no usage statistics. The model is named, so that no router asks a
// classifier model first.
func geminiRun(t *testing.T, w *world, dir string, api *fakeGeminiAPI, env, cmd []string, args ...string) testbin.Result {
	t.Helper()
	testbin.WriteFiles(t, w.home, map[string]string{".gemini/settings.json": `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}`})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	env = append([]string{"GOOGLE_GEMINI_BASE_URL=" + srv.URL, "GEMINI_API_KEY=fake", "GOOGLE_API_KEY=", "GOOGLE_GENAI_USE_VERTEXAI=", "GOOGLE_GENAI_USE_GCA=",
		"GEMINI_CLI_TRUST_WORKSPACE=", "NO_COLOR=1"}, env...)
	argv := append(append(cmd, "-p", "edit the files", "-m", "gemini-2.5-flash", "--yolo", "-o", "json"), args...)
	return w.run(dir, "", env, argv...)
}

// TestGeminiCLIHooks drives the real Gemini CLI (npm @google/gemini-cli
// 0.61.0, which .ci/run installs) against a local fake of its API, in a
// transaction's staged workspace with the hooks `airlock init gemini`
// wrote, and checks what a user relies on:
//
//   - SessionStart's context reaches the model, in the first request;
//   - BeforeTool's deny stops a write_file and a run_shell_command that
//     write the base outside the workspace: the tool does not run, and the
//     model reads airlock's reason as the tool's error; a write_file into
//     the workspace runs;
//   - AfterAgent's block on a refusal (a protected .envrc) makes Gemini
//     send airlock's reason as the next prompt, and when the block is not
//     repeated (the same refusal again, stop_hook_active) the run ends.
//
// Gemini refuses a write_file outside its workspace directories by itself,
// before any hook; the base is one here (--include-directories), as it is
// for a user who added it, so that the guard is what stands in the way.
func TestGeminiCLIHooks(t *testing.T) {
	gemini := testbin.Require(t, "gemini", "airlock's Gemini CLI hooks are checked against the real Gemini CLI; .ci/run installs @google/gemini-cli from npm")
	w := newWorld(t, map[string]string{"a.txt": "base\n"})
	mustCode(t, w.run(w.base, "", nil, w.bin, "init", "gemini"), 0)
	r := w.run(w.base, "", nil, w.bin, "open", "--id", "gem")
	mustCode(t, r, 0)
	staged := strings.TrimSpace(strings.Split(strings.TrimSpace(r.Stdout), "\n")[1])

	t.Run("hooks", func(t *testing.T) {
		api := &fakeGeminiAPI{calls: []fakeToolUse{
			{"write_file", map[string]any{"file_path": filepath.Join(w.base, "new.txt"), "content": "agent\n"}},
			{"run_shell_command", map[string]any{"command": "echo agent > " + filepath.Join(w.base, "b.txt")}},
			{"write_file", map[string]any{"file_path": filepath.Join(staged, "c.txt"), "content": "agent\n"}},
			{"write_file", map[string]any{"file_path": filepath.Join(staged, ".envrc"), "content": "export SECRET=1\n"}},
		}}
		// Headless Gemini runs a project's hooks only in a trusted folder.
		r := geminiRun(t, w, staged, api, []string{"GEMINI_CLI_TRUST_WORKSPACE=true"}, []string{gemini}, "--include-directories", w.base)
		mustCode(t, r, 0)
		if api.next != len(api.calls) {
			t.Fatalf("the fake model made %d of its %d tool calls\n%s", api.next, len(api.calls), r)
		}
		// The conversation opens with Gemini's own <session_context>; the
		// user's prompt follows, SessionStart's context prepended.
		var prompt string
		var results []map[string]any
		var prompts []string
		for _, c := range api.history() {
			for _, p := range c.Parts {
				switch {
				case p.FunctionResponse != nil:
					results = append(results, p.FunctionResponse.Response)
				case c.Role != "user":
				case prompt != "":
					prompts = append(prompts, p.Text)
				case strings.Contains(p.Text, "edit the files"):
					prompt = p.Text
				}
			}
		}
		if !strings.HasPrefix(prompt, "<hook_context>This session works inside airlock transaction gem") || !strings.Contains(prompt, staged) {
			t.Errorf("SessionStart's context is not in the prompt: %q\n%s", prompt, r)
		}
		if len(results) != 4 {
			t.Fatalf("Gemini sent back %d tool results, want 4: %v", len(results), results)
		}
		for i, want := range []string{
			"airlock: write_file denied: it writes " + filepath.Join(w.base, "new.txt"),
			"airlock: run_shell_command denied: its command redirects output to " + filepath.Join(w.base, "b.txt"),
		} {
			if e, _ := results[i]["error"].(string); !strings.Contains(e, want) {
				t.Errorf("tool call %d: Gemini sent back %v, want an error carrying %q", i, results[i], want)
			}
		}
		for i := 2; i < 4; i++ {
			if _, bad := results[i]["error"]; bad {
				t.Errorf("tool call %d into the workspace was refused: %v", i, results[i])
			}
		}
		if testbin.Exists(filepath.Join(w.base, "new.txt")) || testbin.Exists(filepath.Join(w.base, "b.txt")) {
			t.Error("a denied call wrote the base")
		}
		if testbin.ReadFile(t, filepath.Join(staged, "c.txt")) != "agent\n" {
			t.Error("the allowed write_file did not reach the staged workspace")
		}
		// One re-prompt, airlock's reason: the second AfterAgent (the same
		// refusal, stop_hook_active) lets the run end with a message.
		if len(prompts) != 1 || !strings.HasPrefix(prompts[0], "airlock: committing transaction gem would be refused (ProtectedPathNotApproved)") || !strings.Contains(prompts[0], "Paths: .envrc") {
			t.Errorf("Gemini's prompts after the first are %q, want airlock's refusal once", prompts)
		}
		if !strings.Contains(r.Stderr, "airlock: transaction gem would still be refused (ProtectedPathNotApproved)") {
			t.Errorf("the second AfterAgent's message is not shown\n%s", r)
		}
		if testbin.Exists(filepath.Join(w.base, ".envrc")) || w.status("gem") != "open" {
			t.Error("AfterAgent's check changed the base or settled the transaction")
		}
	})

	// docs/agents/gemini.md says --skip-trust is not enough: Gemini CLI
	// 0.61.0 reads the project's .gemini/settings.json before that flag,
	// as an untrusted folder's, so its hooks do not run at all.
	t.Run("skip-trust runs no project hook", func(t *testing.T) {
		api := &fakeGeminiAPI{}
		r := geminiRun(t, w, staged, api, nil, []string{gemini}, "--skip-trust")
		mustCode(t, r, 0)
		prompt := ""
		for _, c := range api.history() {
			for _, p := range c.Parts {
				if c.Role == "user" && strings.Contains(p.Text, "edit the files") {
					prompt = p.Text
				}
			}
		}
		if prompt == "" {
			t.Fatalf("the prompt did not reach the fake\n%s", r)
		}
		if strings.Contains(prompt, "<hook_context>") {
			t.Errorf("with --skip-trust the project's SessionStart hook ran: docs/agents/gemini.md is out of date\n%q", prompt)
		}
	})

	// The docs' line, `airlock run -- gemini …`: the base's own path shows
	// the staged tree, so a write_file there is the transaction's, the
	// guard lets it through, and the run's commit lands it.
	t.Run("under airlock run", func(t *testing.T) {
		api := &fakeGeminiAPI{calls: []fakeToolUse{{"write_file", map[string]any{"file_path": filepath.Join(w.base, "run.txt"), "content": "agent\n"}}}}
		r := geminiRun(t, w, w.base, api, []string{"GEMINI_CLI_TRUST_WORKSPACE=true"}, []string{w.bin, "run", "--", gemini})
		mustCode(t, r, 0)
		var prompt string
		var results []map[string]any
		for _, c := range api.history() {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil {
					results = append(results, p.FunctionResponse.Response)
				} else if c.Role == "user" && strings.Contains(p.Text, "edit the files") {
					prompt = p.Text
				}
			}
		}
		if !strings.Contains(prompt, "The directory "+w.base+" you see is a private staged copy of the base, shown at the base's own path") {
			t.Errorf("SessionStart's context under airlock run is not the same-path one: %q\n%s", prompt, r)
		}
		if len(results) != 1 || results[0]["error"] != nil {
			t.Errorf("the write_file at the base's path under airlock run was refused: %v\n%s", results, r)
		}
		if !strings.Contains(r.Stderr, "airlock.outcome=committed") || testbin.ReadFile(t, filepath.Join(w.base, "run.txt")) != "agent\n" {
			t.Errorf("the run did not commit the agent's write_file\n%s", r)
		}
	})
}
