package hook_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestClaudeWorktreeSession plays a `claude --worktree feature-auth`
// session as Claude Code's hooks reference describes it: WorktreeCreate,
// SessionStart in the worktree, Stop after each turn, WorktreeRemove at
// exit; then the session is resumed under the same name and its change
// lands.
func TestClaudeWorktreeSession(t *testing.T) {
	w := newWorld(t, map[string]string{"README.md": "hello\n", "src/app.go": "package app\n"})

	r := w.hook("claude", "worktree-create", worktreeCreate(w.base, "feature-auth"))
	mustCode(t, r, 0)
	staged := strings.TrimSuffix(r.Stdout, "\n")
	if !filepath.IsAbs(staged) || strings.Contains(staged, "\n") || r.Stdout != staged+"\n" {
		t.Fatalf("stdout must be exactly one absolute path\n%s", r)
	}
	if testbin.ReadFile(t, filepath.Join(staged, "src", "app.go")) != "package app\n" {
		t.Fatalf("the worktree %s does not hold the project", staged)
	}
	if !strings.HasPrefix(r.Stderr, "airlock: opened transaction feature-auth over "+w.base+";") || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("stderr should say which transaction was opened, in one line\n%s", r)
	}

	t.Run("session start names the transaction and what is protected", func(t *testing.T) {
		r := w.hook("claude", "session-start", with(common("SessionStart", staged), "source", "startup", "model", "claude-sonnet-4-6"))
		mustCode(t, r, 0)
		out := decode(t, r)
		hso, _ := out["hookSpecificOutput"].(map[string]any)
		if keys(out) != "hookSpecificOutput" || keys(hso) != "additionalContext,hookEventName" || hso["hookEventName"] != "SessionStart" {
			t.Fatalf("answer %v, want hookSpecificOutput with hookEventName and additionalContext only", out)
		}
		ctx, _ := hso["additionalContext"].(string)
		for _, want := range []string{"transaction feature-auth", "base " + w.base, staged, ".envrc", ".github/workflows/", ".airlock.toml"} {
			if !strings.Contains(ctx, want) {
				t.Errorf("context does not mention %q:\n%s", want, ctx)
			}
		}
		if r.Stderr != "" {
			t.Errorf("stderr %q, want nothing", r.Stderr)
		}
		// Codex documents the same SessionStart answer.
		cr := w.hook("codex", "session-start", map[string]any{"session_id": "s-1", "transcript_path": nil, "cwd": staged,
			"hook_event_name": "SessionStart", "model": "gpt-5-codex", "permission_mode": "default", "source": "startup"})
		mustCode(t, cr, 0)
		if cr.Stdout != r.Stdout {
			t.Errorf("codex's SessionStart answer differs from claude's\n%s", cr)
		}
	})

	testbin.WriteFiles(t, staged, map[string]string{"src/auth.go": "package app // auth\n"})
	t.Run("a stop that would commit lets Claude stop", func(t *testing.T) {
		r := w.hook("claude", "stop", stopInput(staged, false))
		mustCode(t, r, 0)
		if r.Stdout != "" || r.Stderr != "" {
			t.Fatalf("want no output at all (exit 0 allows the stop)\n%s", r)
		}
	})

	testbin.WriteFiles(t, staged, map[string]string{".envrc": "export SECRET=1\n"})
	t.Run("a refusal blocks the stop with what to fix", func(t *testing.T) {
		r := w.hook("claude", "stop", stopInput(filepath.Join(staged, "src"), false))
		mustCode(t, r, 0)
		out := decode(t, r)
		reason, _ := out["reason"].(string)
		if keys(out) != "decision,reason" || out["decision"] != "block" {
			t.Fatalf("answer %v, want exactly decision and reason", out)
		}
		for _, want := range []string{"ProtectedPathNotApproved", ".envrc", "undo your changes", "airlock review feature-auth", "has not been touched"} {
			if !strings.Contains(reason, want) {
				t.Errorf("reason does not say %q:\n%s", want, reason)
			}
		}
		if testbin.Exists(filepath.Join(w.base, ".envrc")) || testbin.Exists(filepath.Join(w.base, "src", "auth.go")) {
			t.Error("a stop hook in check mode wrote to the base")
		}
	})
	t.Run("the same refusal again lets Claude stop and tells the user", func(t *testing.T) {
		r := w.hook("claude", "stop", stopInput(staged, true))
		mustCode(t, r, 0)
		out := decode(t, r)
		msg, _ := out["systemMessage"].(string)
		if keys(out) != "systemMessage" || !strings.Contains(msg, "still be refused (ProtectedPathNotApproved)") {
			t.Fatalf("answer %v, want only a systemMessage saying the refusal stands", out)
		}
	})
	t.Run("a changed workspace is checked afresh", func(t *testing.T) {
		if err := os.Remove(filepath.Join(staged, ".envrc")); err != nil {
			t.Fatal(err)
		}
		r := w.hook("claude", "stop", stopInput(staged, true))
		mustCode(t, r, 0)
		if r.Stdout != "" {
			t.Fatalf("the fixed workspace should let Claude stop\n%s", r)
		}
	})

	t.Run("removing the worktree parks the transaction with its changes", func(t *testing.T) {
		r := w.hook("claude", "worktree-remove", with(common("WorktreeRemove", w.base), "worktree_path", staged))
		mustCode(t, r, 0)
		if r.Stdout != "" {
			t.Errorf("stdout %q, want nothing", r.Stdout)
		}
		if !strings.HasPrefix(r.Stderr, "airlock: parked transaction feature-auth (open) with its changes: 1 added, 0 modified, 0 deleted; nothing was discarded.\n") {
			t.Errorf("stderr should say the transaction was parked\n%s", r)
		}
		if testbin.ReadFile(t, filepath.Join(staged, "src", "auth.go")) != "package app // auth\n" {
			t.Error("the parked workspace lost its change")
		}
		if got := w.status("feature-auth"); got != "open" {
			t.Errorf("status %s, want open", got)
		}
	})

	t.Run("a new session under the same name resumes it", func(t *testing.T) {
		r := w.hook("claude", "worktree-create", worktreeCreate(w.base, "feature-auth"))
		mustCode(t, r, 0)
		if r.Stdout != staged+"\n" || !strings.Contains(r.Stderr, "resuming transaction feature-auth") {
			t.Fatalf("want the parked workspace back\n%s", r)
		}
	})

	r = w.airlock("", "commit", "feature-auth", "--quiet")
	mustCode(t, r, 0)
	if testbin.ReadFile(t, filepath.Join(w.base, "src", "auth.go")) != "package app // auth\n" {
		t.Error("the session's change did not land")
	}
	r = w.hook("claude", "worktree-remove", with(common("WorktreeRemove", w.base), "worktree_path", staged))
	mustCode(t, r, 0)
	if r.Stderr != "airlock: transaction feature-auth is already committed; nothing to remove\n" {
		t.Errorf("removing a committed worktree\n%s", r)
	}
}

// TestClaudeWorktreeRemoveDiscardsEmpty: a worktree without changes
// leaves nothing behind.
func TestClaudeWorktreeRemoveDiscardsEmpty(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a"})
	// An isolated subagent's name, in the spelling some builds sent.
	r := w.hook("claude", "worktree-create", with(common("WorktreeCreate", w.base), "worktree_name", "agent-a1b2c3"))
	mustCode(t, r, 0)
	staged := strings.TrimSpace(r.Stdout)
	r = w.hook("claude", "worktree-remove", with(common("WorktreeRemove", w.base), "worktree_path", staged))
	mustCode(t, r, 0)
	if !strings.HasPrefix(r.Stderr, "airlock: discarded transaction agent-a1b2c3: it had no changes") {
		t.Errorf("stderr should say it was discarded\n%s", r)
	}
	if testbin.Exists(staged) {
		t.Error("the discarded workspace is still there")
	}
	if got := w.status("agent-a1b2c3"); got != "discarded" {
		t.Errorf("status %s, want discarded", got)
	}
	// A path no transaction owns is never touched.
	other := testbin.RealDir(t)
	testbin.WriteFiles(t, other, map[string]string{"x": "x"})
	r = w.hook("claude", "worktree-remove", with(common("WorktreeRemove", w.base), "worktree_path", other))
	mustCode(t, r, 0)
	if r.Stderr != "airlock: "+other+" is not the workspace of an airlock transaction; left as it is\n" || !testbin.Exists(filepath.Join(other, "x")) {
		t.Errorf("a foreign worktree path\n%s", r)
	}
}

// TestClaudeWorktreeCreateFails: every failure exits non-zero with nothing
// on stdout, which makes Claude Code abort the worktree.
func TestClaudeWorktreeCreateFails(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a"})
	r := w.hook("claude", "worktree-create", worktreeCreate(w.base, "outer"))
	mustCode(t, r, 0)
	staged := strings.TrimSpace(r.Stdout)
	cases := []struct {
		name, stdin, stderr string
	}{
		{"a missing project", `{"hook_event_name":"WorktreeCreate","name":"x","cwd":"` + filepath.Join(w.base, "missing") + `"}`, "no such file or directory"},
		{"inside another transaction", `{"hook_event_name":"WorktreeCreate","name":"inner","cwd":"` + staged + `"}`, "inside the workspace of airlock transaction outer"},
		{"no input", ``, "no hook input on stdin"},
		{"not JSON", `name: x`, "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := w.run("", c.stdin, nil, airlockBin, "hook", "claude", "worktree-create")
			if r.Code == 0 || r.Stdout != "" || !strings.Contains(r.Stderr, c.stderr) {
				t.Fatalf("want a non-zero exit, no stdout, and stderr saying %q\n%s", c.stderr, r)
			}
		})
	}
	r = w.run("", "{}", nil, airlockBin, "hook", "claude", "teleport")
	if r.Code != 125 || !strings.Contains(r.Stderr, `unknown claude hook event "teleport"`) {
		t.Errorf("an unknown event\n%s", r)
	}
}

// TestStopOutsideTransaction: a session that is not in a transaction is
// never held up, and the state root is not created for it.
func TestStopOutsideTransaction(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a"})
	r := w.hook("claude", "stop", stopInput(w.base, false))
	mustCode(t, r, 0)
	if r.Stdout != "" || r.Stderr != "" {
		t.Errorf("claude: want no output\n%s", r)
	}
	r = w.hook("codex", "stop", codexStop(w.base, false))
	mustCode(t, r, 0)
	if r.Stdout != "{}\n" || r.Stderr != "" {
		t.Errorf("codex: want {}\n%s", r)
	}
	r = w.hook("claude", "session-start", with(common("SessionStart", w.base), "source", "startup"))
	mustCode(t, r, 0)
	if r.Stdout != "" {
		t.Errorf("session-start outside a transaction: want no context\n%s", r)
	}
	if testbin.Exists(w.state) {
		t.Error("a hook outside any transaction created the state root")
	}
	// Codex reads Stop's stdout as JSON even when the input is broken.
	r = w.run("", "not json", nil, airlockBin, "hook", "codex", "stop")
	if r.Code != 0 || r.Stdout != "{}\n" || !strings.Contains(r.Stderr, "not a JSON object") {
		t.Errorf("codex stop with bad input\n%s", r)
	}
}

// TestStopModes: the stop hook does what the project's .airlock.toml says,
// as recorded when the transaction opened.
func TestStopModes(t *testing.T) {
	t.Run("check runs the configured validate", func(t *testing.T) {
		w := newWorld(t, map[string]string{"a": "a", ".airlock.toml": "validate = \"test ! -e bad || { echo 'bad file present'; exit 1; }\"\n"})
		staged := strings.TrimSpace(w.hook("claude", "worktree-create", worktreeCreate(w.base, "v")).Stdout)
		testbin.WriteFiles(t, staged, map[string]string{"bad": "x"})
		for _, agent := range []string{"claude", "codex"} {
			in := stopInput(staged, false)
			if agent == "codex" {
				in = codexStop(staged, false)
				testbin.WriteFiles(t, staged, map[string]string{"bad": "changed, so checked afresh"})
			}
			r := w.hook(agent, "stop", in)
			mustCode(t, r, 0)
			out := decode(t, r)
			reason, _ := out["reason"].(string)
			if out["decision"] != "block" || !strings.Contains(reason, "ValidationFailed") || !strings.Contains(reason, "bad file present") {
				t.Errorf("%s: want a block naming the failed validation and its output\n%s", agent, r)
			}
		}
		if testbin.Exists(filepath.Join(w.base, "bad")) {
			t.Error("validation wrote to the base")
		}
	})
	t.Run("commit commits on stop", func(t *testing.T) {
		w := newWorld(t, map[string]string{"a": "a", ".airlock.toml": "[hooks]\nstop = \"commit\"\n"})
		staged := strings.TrimSpace(w.hook("claude", "worktree-create", worktreeCreate(w.base, "c")).Stdout)
		testbin.WriteFiles(t, staged, map[string]string{".envrc": "x"})
		r := w.hook("claude", "stop", stopInput(staged, false))
		mustCode(t, r, 0)
		if out := decode(t, r); out["decision"] != "block" {
			t.Fatalf("a refused commit must block\n%s", r)
		}
		if err := os.Remove(filepath.Join(staged, ".envrc")); err != nil {
			t.Fatal(err)
		}
		testbin.WriteFiles(t, staged, map[string]string{"a": "a2"})
		r = w.hook("claude", "stop", stopInput(staged, true))
		mustCode(t, r, 0)
		out := decode(t, r)
		if msg, _ := out["systemMessage"].(string); keys(out) != "systemMessage" || !strings.Contains(msg, "transaction c committed: 0 added, 1 modified, 0 deleted") {
			t.Fatalf("want a systemMessage saying it committed\n%s", r)
		}
		if testbin.ReadFile(t, filepath.Join(w.base, "a")) != "a2" || w.status("c") != "committed" {
			t.Error("the commit on stop did not land")
		}
	})
	t.Run("a subagent's stop never commits", func(t *testing.T) {
		// A Task subagent that ends its turn while the main agent is half
		// way: under stop = "commit" the session's transaction stays open.
		w := newWorld(t, map[string]string{"a": "a", ".airlock.toml": "[hooks]\nstop = \"commit\"\n"})
		staged := strings.TrimSpace(w.hook("claude", "worktree-create", worktreeCreate(w.base, "s")).Stdout)
		testbin.WriteFiles(t, staged, map[string]string{"a": "half-done"})
		for _, agent := range []string{"claude", "codex"} {
			in := stopInput(staged, false)
			if agent == "codex" {
				in = codexStop(staged, false)
			}
			r := w.hook(agent, "subagent-stop", in)
			mustCode(t, r, 0)
		}
		if testbin.ReadFile(t, filepath.Join(w.base, "a")) != "a" || w.status("s") != "open" {
			t.Errorf("a subagent's stop settled the session's transaction: base a = %q, status %s", testbin.ReadFile(t, filepath.Join(w.base, "a")), w.status("s"))
		}
		if !testbin.Exists(staged) {
			t.Error("the session's staged workspace is gone")
		}
	})
	t.Run("off does nothing", func(t *testing.T) {
		w := newWorld(t, map[string]string{"a": "a", ".airlock.toml": "[hooks]\nstop = \"off\"\n"})
		staged := strings.TrimSpace(w.hook("claude", "worktree-create", worktreeCreate(w.base, "o")).Stdout)
		testbin.WriteFiles(t, staged, map[string]string{".envrc": "x"})
		if r := w.hook("claude", "stop", stopInput(staged, false)); r.Code != 0 || r.Stdout != "" {
			t.Errorf("claude\n%s", r)
		}
		if r := w.hook("codex", "stop", codexStop(staged, false)); r.Code != 0 || r.Stdout != "{}\n" {
			t.Errorf("codex\n%s", r)
		}
	})
}

// TestStopWithoutCwd: an input without cwd is answered for the directory
// the hook runs in, which both agents set to the session's.
func TestStopWithoutCwd(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a"})
	staged := strings.TrimSpace(w.hook("claude", "worktree-create", worktreeCreate(w.base, "nocwd")).Stdout)
	testbin.WriteFiles(t, staged, map[string]string{".envrc": "x"})
	r := w.run(staged, `{"hook_event_name":"Stop","stop_hook_active":false}`, nil, w.bin, "hook", "claude", "stop")
	mustCode(t, r, 0)
	if out := decode(t, r); out["decision"] != "block" {
		t.Errorf("want a block for the session's directory\n%s", r)
	}
}

// TestHookAgentCannotLowerValidate: an agent behind the hooks tries every
// way it has to get past the project's validate: it rewrites the staged
// .airlock.toml (not protected here, so no approval is needed) to drop
// validate, and it runs airlock itself from its shell in the worktree with
// --validate true and an empty --validate. The gate holds each time; the stop
// hook, committing on stop, is refused ValidationFailed and blocks.
func TestHookAgentCannotLowerValidate(t *testing.T) {
	cfg := "default_protect = false\nvalidate = \"test ! -e bad || { echo 'bad file present'; exit 1; }\"\n[hooks]\nstop = \"commit\"\n"
	w := newWorld(t, map[string]string{"a": "a", ".airlock.toml": cfg})
	staged := strings.TrimSpace(w.hook("claude", "worktree-create", worktreeCreate(w.base, "gate")).Stdout)
	testbin.WriteFiles(t, staged, map[string]string{"bad": "x", ".airlock.toml": "[hooks]\nstop = \"commit\"\n"})

	for _, args := range [][]string{
		{"commit", "gate", "--validate", "true"},
		{"commit", "gate", "--validate=", "--approve"},
		{"commit", "gate", "--validate", "exit 0", "--approve"},
	} {
		r := w.run(staged, "", nil, append([]string{airlockBin}, args...)...)
		if r.Code != 75 && r.Code != 125 {
			t.Errorf("%q from the agent's shell: want a refusal (75) or an error (125)\n%s", args, r)
		}
		if r.Code == 75 && !strings.Contains(r.Stderr, "airlock.refusal=ValidationFailed") {
			t.Errorf("%q: refused, but not for the project's validation\n%s", args, r)
		}
	}
	r := w.hook("claude", "stop", stopInput(staged, false))
	mustCode(t, r, 0)
	out := decode(t, r)
	reason, _ := out["reason"].(string)
	if out["decision"] != "block" || !strings.Contains(reason, "ValidationFailed") || !strings.Contains(reason, "bad file present") {
		t.Errorf("the stop hook's commit must be refused by the project's validate\n%s", r)
	}
	if testbin.Exists(filepath.Join(w.base, "bad")) || testbin.ReadFile(t, filepath.Join(w.base, ".airlock.toml")) != cfg {
		t.Error("the agent's change landed although the project's validation failed")
	}
	if got := w.status("gate"); got != "refused" {
		t.Errorf("status %s, want refused (kept)", got)
	}
}
