package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// fixture reads testdata/NAME, an event's JSON as the agent's published
// schema gives it, with $KEY replaced by the values given.
func fixture(t *testing.T, name string, vars map[string]string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range vars {
		q, _ := json.Marshal(v)
		s = strings.ReplaceAll(s, `"$`+k+`"`, string(q))
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// TestClaudeSessionEnd: a headless `claude -p --worktree NAME` fires no
// WorktreeRemove; SessionEnd settles its transaction instead. Without
// changes it is discarded; with changes it is parked under the default
// policy and committed under `[hooks] stop = "commit"`; a /clear, after
// which the same process goes on in the workspace, settles nothing.
func TestClaudeSessionEnd(t *testing.T) {
	open := func(t *testing.T, w *world, name string) string {
		t.Helper()
		r := w.hook("claude", "worktree-create", worktreeCreate(w.base, name))
		mustCode(t, r, 0)
		return strings.TrimSpace(r.Stdout)
	}
	end := func(t *testing.T, w *world, cwd, reason string) testbin.Result {
		t.Helper()
		r := w.hook("claude", "session-end", fixture(t, "claude-session-end.json", map[string]string{"CWD": cwd, "REASON": reason}))
		mustCode(t, r, 0)
		if r.Stdout != "" {
			t.Errorf("SessionEnd answers nothing on stdout\n%s", r)
		}
		return r
	}

	t.Run("another session's end settles nothing", func(t *testing.T) {
		// A nested `claude -p` the agent runs in its workspace, or a
		// second session there, ends: the transaction stays the opening
		// session's, open, with its half-done changes.
		w := newWorld(t, map[string]string{"a": "a\n", ".airlock.toml": "[hooks]\nstop = \"commit\"\n"})
		staged := open(t, w, "main-session")
		testbin.WriteFiles(t, staged, map[string]string{"a": "half done\n"})
		in := fixture(t, "claude-session-end.json", map[string]string{"CWD": staged, "REASON": "other"})
		in["session_id"] = "another-session"
		mustCode(t, w.hook("claude", "session-end", in), 0)
		if w.status("main-session") != "open" || testbin.ReadFile(t, filepath.Join(w.base, "a")) != "a\n" {
			t.Errorf("another session's end settled the transaction: status %s, base a %q", w.status("main-session"), testbin.ReadFile(t, filepath.Join(w.base, "a")))
		}
	})
	t.Run("no changes: discarded", func(t *testing.T) {
		w := newWorld(t, map[string]string{"a": "a\n"})
		staged := open(t, w, "quiet-run")
		r := end(t, w, staged, "other")
		if !strings.HasPrefix(r.Stderr, "airlock: discarded transaction quiet-run at the session's end: it had no changes") {
			t.Errorf("stderr should say it was discarded\n%s", r)
		}
		if got := w.status("quiet-run"); got != "discarded" || testbin.Exists(staged) {
			t.Errorf("status %s, staged tree there: %v; want discarded and gone", got, testbin.Exists(staged))
		}
	})

	t.Run("changes, default policy: parked", func(t *testing.T) {
		w := newWorld(t, map[string]string{"a": "a\n"})
		staged := open(t, w, "worked")
		testbin.WriteFiles(t, staged, map[string]string{"src/new.go": "package src\n"})
		r := end(t, w, filepath.Join(staged, "src"), "prompt_input_exit")
		if !strings.Contains(r.Stderr, "parked transaction worked (open) at the session's end with its changes: 1 added, 0 modified, 0 deleted") {
			t.Errorf("stderr should say it was parked\n%s", r)
		}
		if got := w.status("worked"); got != "open" || testbin.ReadFile(t, filepath.Join(staged, "src", "new.go")) != "package src\n" {
			t.Errorf("status %s; the parked workspace must keep its change", got)
		}
		if testbin.Exists(filepath.Join(w.base, "src", "new.go")) {
			t.Error("a parked transaction reached the base")
		}
	})

	t.Run("changes, stop = commit: committed", func(t *testing.T) {
		w := newWorld(t, map[string]string{"a": "a\n", ".airlock.toml": "[hooks]\nstop = \"commit\"\n"})
		staged := open(t, w, "one-shot")
		testbin.WriteFiles(t, staged, map[string]string{"a": "b\n"})
		r := end(t, w, staged, "other")
		if !strings.Contains(r.Stderr, "transaction one-shot committed at the session's end: 0 added, 1 modified, 0 deleted") {
			t.Errorf("stderr should say it was committed\n%s", r)
		}
		if testbin.ReadFile(t, filepath.Join(w.base, "a")) != "b\n" || w.status("one-shot") != "committed" {
			t.Error("the session's change did not land")
		}
	})

	t.Run("clear: the session goes on", func(t *testing.T) {
		w := newWorld(t, map[string]string{"a": "a\n"})
		staged := open(t, w, "cleared")
		r := end(t, w, staged, "clear")
		if r.Stderr != "" || w.status("cleared") != "open" || !testbin.Exists(staged) {
			t.Errorf("a /clear settled the transaction (status %s)\n%s", w.status("cleared"), r)
		}
	})

	t.Run("outside a transaction: nothing", func(t *testing.T) {
		w := newWorld(t, map[string]string{"a": "a\n"})
		r := end(t, w, w.base, "logout")
		if r.Stderr != "" || testbin.Exists(w.state) {
			t.Errorf("SessionEnd outside any transaction acted (or made the state root)\n%s", r)
		}
	})
}

// TestCodexSubagentStop: Codex runs SubagentStop, with Stop's semantics,
// when a thread-spawned subagent finishes; airlock answers it as it
// answers Stop, and always with a JSON object.
func TestCodexSubagentStop(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a\n"})
	r := w.airlock("", "open", "--workdir", w.base, "--id", "sub")
	mustCode(t, r, 0)
	staged := strings.Split(strings.TrimSpace(r.Stdout), "\n")[1]
	in := func() map[string]any { return fixture(t, "codex-subagent-stop.json", map[string]string{"CWD": staged}) }

	r = w.hook("codex", "subagent-stop", in())
	mustCode(t, r, 0)
	if out := decode(t, r); len(out) != 0 {
		t.Errorf("a clean subagent stop answers {}, got %v", out)
	}
	testbin.WriteFiles(t, staged, map[string]string{".envrc": "export X=1\n"})
	r = w.hook("codex", "subagent-stop", in())
	mustCode(t, r, 0)
	out := decode(t, r)
	reason, _ := out["reason"].(string)
	if out["decision"] != "block" || !strings.Contains(reason, "ProtectedPathNotApproved") || !strings.Contains(reason, ".envrc") {
		t.Errorf("a protected change should block the subagent with what to fix: %v", out)
	}
}
