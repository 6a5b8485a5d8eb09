package hook_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestClaudeCodePostToolUseCheckpoints drives the real Claude Code against
// the fake API in a worktree session's transaction (opened by airlock's
// WorktreeCreate hook, as `claude --worktree` opens one) with the hooks
// `airlock init claude` wrote: the model Writes a file, then runs a Bash
// command that edits, deletes and links. airlock's PostToolUse hook takes
// a checkpoint after each (checkpoint 1 is the workspace at open), and a
// rewind to the one after the Write undoes what the shell command did,
// which Claude Code's own rewind does not see; a rewind to 1 goes back to
// before the Write.
func TestClaudeCodePostToolUseCheckpoints(t *testing.T) {
	claude := testbin.Require(t, "claude", "the PostToolUse checkpoint is checked against the real Claude Code; .ci/run installs @anthropic-ai/claude-code from npm")
	w := newWorld(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	mustCode(t, w.run(w.base, "", nil, w.bin, "init", "claude"), 0)
	// The session claude runs as below: the hook checkpoints only its own
	// session's transaction, as `claude --worktree` opens it with the
	// session's id.
	const session = "5f0c8a4e-7d3b-4c1a-9e2f-1b6d8c0a4e71"
	in, _ := json.Marshal(map[string]any{"session_id": session, "cwd": w.base, "hook_event_name": "WorktreeCreate", "name": "steps"})
	r := w.run(w.base, string(in), nil, w.bin, "hook", "claude", "worktree-create")
	mustCode(t, r, 0)
	staged := strings.TrimSpace(r.Stdout)
	m := regexp.MustCompile(`opened transaction (\S+) `).FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("worktree-create named no transaction\n%s", r)
	}
	id := m[1]

	api := &fakeClaudeAPI{seen: map[string]toolResult{}, calls: []fakeToolUse{
		{"Write", map[string]any{"file_path": filepath.Join(staged, "c.txt"), "content": "agent\n"}},
		{"Bash", map[string]any{"command": "cd " + staged + " && echo shell > b.txt && rm a.txt && ln -s c.txt link"}},
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	r = w.run(staged, "", []string{"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=sk-fake", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"},
		claude, "-p", "edit the files", "--session-id", session, "--output-format", "json", "--permission-mode", "acceptEdits", "--allowedTools", "Bash,Write")
	mustCode(t, r, 0)
	api.mu.Lock()
	for i := range 2 {
		if res, ok := api.seen["toolu_"+string(rune('0'+i))]; !ok || res.IsError {
			t.Fatalf("tool call %d did not run: %+v\n%s", i, res, r)
		}
	}
	api.mu.Unlock()
	if _, err := os.Lstat(filepath.Join(staged, "a.txt")); err == nil {
		t.Fatal("the Bash call did not run")
	}

	r = w.run("", "", nil, w.bin, "checkpoints", id, "--json")
	mustCode(t, r, 0)
	var list struct {
		Checkpoints []struct {
			Number  int    `json:"number"`
			Auto    string `json:"auto"`
			Message string `json:"message"`
		} `json:"checkpoints"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatal(err)
	}
	// The tool and what it named (Claude Code may drop a leading cd to
	// its own directory from the command it runs).
	want := []*regexp.Regexp{regexp.MustCompile(`^at open$`), regexp.MustCompile(`^after Write c\.txt$`), regexp.MustCompile(`^after Bash .*echo shell > b\.txt && rm a\.txt`)}
	if len(list.Checkpoints) != len(want) {
		t.Fatalf("checkpoints %+v, want %d: at open and one after each tool call", list.Checkpoints, len(want))
	}
	for i, c := range list.Checkpoints {
		if c.Number != i+1 || c.Auto != "hook" || !want[i].MatchString(c.Message) {
			t.Errorf("checkpoint %d: %+v, want hook's %v", i+1, c, want[i])
		}
	}

	mustCode(t, w.run("", "", nil, w.bin, "rewind", id, "2"), 0)
	for p, content := range map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "agent\n"} {
		if got := testbin.ReadFile(t, filepath.Join(staged, p)); got != content {
			t.Errorf("after rewind 2, %s = %q, want %q", p, got, content)
		}
	}
	if _, err := os.Lstat(filepath.Join(staged, "link")); err == nil {
		t.Error("after rewind 2 the Bash call's symlink is still there")
	}
	mustCode(t, w.run("", "", nil, w.bin, "rewind", id, "1"), 0)
	if testbin.Exists(filepath.Join(staged, "c.txt")) {
		t.Error("after rewind 1 the Write's file is still there")
	}
	if testbin.ReadFile(t, filepath.Join(w.base, "b.txt")) != "b\n" || !testbin.Exists(filepath.Join(w.base, "a.txt")) {
		t.Error("the base was touched")
	}
}

// TestPostToolUseCheckpointsOnlyWhatChanged: the PostToolUse hook answers
// nothing on stdout, ever, and exits 0: outside a transaction, in one no
// hook opened (it takes no checkpoint there), and in a worktree session's,
// where it takes one only when the workspace changed since the last.
func TestPostToolUseCheckpointsOnlyWhatChanged(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	post := func(cwd string) testbin.Result {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"session_id": "s1", "cwd": cwd, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "make"}})
		r := w.run(cwd, string(in), nil, w.bin, "hook", "claude", "post-tool-use")
		mustCode(t, r, 0)
		if r.Stdout != "" {
			t.Errorf("post-tool-use answered %q", r.Stdout)
		}
		return r
	}
	count := func(id string) int {
		t.Helper()
		r := w.run("", "", nil, w.bin, "checkpoints", id, "--json")
		mustCode(t, r, 0)
		return strings.Count(r.Stdout, `"number"`)
	}
	post(w.base)

	r := w.run(w.base, "", nil, w.bin, "open", "--id", "plain")
	mustCode(t, r, 0)
	plain := strings.TrimSpace(strings.Split(strings.TrimSpace(r.Stdout), "\n")[1])
	testbin.WriteFiles(t, plain, map[string]string{"p.txt": "p\n"})
	post(plain)
	if n := count("plain"); n != 0 {
		t.Errorf("a transaction no hook opened got %d checkpoints", n)
	}

	in, _ := json.Marshal(map[string]any{"session_id": "s1", "cwd": w.base, "hook_event_name": "WorktreeCreate", "name": "wt"})
	r = w.run(w.base, string(in), nil, w.bin, "hook", "claude", "worktree-create")
	mustCode(t, r, 0)
	staged := strings.TrimSpace(r.Stdout)
	if n := count("wt"); n != 1 {
		t.Fatalf("worktree-create took %d checkpoints, want 1 (at open)", n)
	}
	post(staged)
	if n := count("wt"); n != 1 {
		t.Errorf("a tool call that wrote nothing was checkpointed (%d)", n)
	}
	testbin.WriteFiles(t, staged, map[string]string{"b.txt": "b\n"})
	if r := post(staged); !strings.Contains(r.Stderr, "checkpoint 2 of wt after Bash (airlock rewind wt 2 returns here)") {
		t.Errorf("post-tool-use said\n%s", r)
	}
	if n := count("wt"); n != 2 {
		t.Errorf("after a write: %d checkpoints, want 2", n)
	}
}
