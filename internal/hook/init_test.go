package hook_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

const claudeSettings = `{
  "hooks": {
    "WorktreeCreate": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook claude worktree-create"
          }
        ]
      }
    ],
    "WorktreeRemove": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook claude worktree-remove"
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook claude session-start"
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook claude stop"
          }
        ]
      }
    ],
    "SubagentStop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook claude subagent-stop"
          }
        ]
      }
    ],
    "SessionEnd": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook claude session-end",
            "timeout": 60
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Write|Edit|MultiEdit|NotebookEdit|Bash",
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook claude pre-tool-use",
            "timeout": 30
          }
        ]
      }
    ],
    "PostToolUse": [
      {
        "matcher": "Write|Edit|MultiEdit|Bash",
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook claude post-tool-use",
            "timeout": 30
          }
        ]
      }
    ]
  }
}
`

const codexHooks = `{
  "hooks": {
    "SessionStart": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook codex session-start"
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook codex stop"
          }
        ]
      }
    ],
    "SubagentStop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook codex subagent-stop"
          }
        ]
      }
    ],
    "SessionEnd": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook codex session-end"
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook codex pre-tool-use"
          }
        ]
      }
    ]
  }
}
`

const geminiSettings = `{
  "hooks": {
    "SessionStart": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook gemini session-start"
          }
        ]
      }
    ],
    "AfterAgent": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook gemini after-agent",
            "timeout": 600000
          }
        ]
      }
    ],
    "BeforeTool": [
      {
        "matcher": "^(write_file|replace|run_shell_command)$",
        "hooks": [
          {
            "type": "command",
            "command": "airlock hook gemini before-tool",
            "timeout": 30000
          }
        ]
      }
    ]
  }
}
`

// TestInit: init writes the hooks where each agent documents them, and a
// second run changes nothing.
func TestInit(t *testing.T) {
	cases := []struct {
		agent, file, want, events string
	}{
		{"claude", ".claude/settings.json", claudeSettings, "WorktreeCreate, WorktreeRemove, SessionStart, Stop, SubagentStop, SessionEnd, PreToolUse, PostToolUse"},
		{"codex", ".codex/hooks.json", codexHooks, "SessionStart, Stop, SubagentStop, SessionEnd, PreToolUse"},
		{"gemini", ".gemini/settings.json", geminiSettings, "SessionStart, AfterAgent, BeforeTool"},
	}
	for _, c := range cases {
		t.Run(c.agent, func(t *testing.T) {
			w := newWorld(t, map[string]string{"a": "a"})
			path := filepath.Join(w.base, filepath.FromSlash(c.file))
			r := w.run(w.base, "", nil, w.bin, "init", c.agent)
			mustCode(t, r, 0)
			if r.Stdout != "" || r.Stderr != "airlock: added airlock's "+c.events+" hooks to "+path+"\n" {
				t.Errorf("first run\n%s", r)
			}
			if got := testbin.ReadFile(t, path); got != c.want {
				t.Fatalf("%s:\n%s\nwant:\n%s", c.file, got, c.want)
			}
			r = w.run("", "", nil, w.bin, "init", c.agent, "--workdir", w.base)
			mustCode(t, r, 0)
			if r.Stderr != "airlock: "+path+" already runs airlock's hooks; nothing changed\n" {
				t.Errorf("second run\n%s", r)
			}
			if got := testbin.ReadFile(t, path); got != c.want {
				t.Errorf("a second run changed %s", c.file)
			}
		})
	}
}

// TestInitMerges: settings and hooks already there are kept, in their
// order; airlock's are added beside them.
func TestInitMerges(t *testing.T) {
	w := newWorld(t, map[string]string{".claude/settings.json": `{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "./notify.sh", "timeout": 5}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}],
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "/opt/bin/airlock hook claude session-start"}]}]
  },
  "model": "opus"
}`})
	r := w.run(w.base, "", nil, w.bin, "init", "claude")
	mustCode(t, r, 0)
	if !strings.Contains(r.Stderr, "added airlock's WorktreeCreate, WorktreeRemove, Stop, SubagentStop, SessionEnd, PreToolUse, PostToolUse hooks") {
		t.Errorf("an existing airlock SessionStart hook (by absolute path) must count as present\n%s", r)
	}
	got := testbin.ReadFile(t, filepath.Join(w.base, ".claude", "settings.json"))
	// Key order is kept: the user's keys first, in their order.
	order := []string{`"permissions"`, `"hooks"`, `"Stop"`, `"./notify.sh"`, `"airlock hook claude stop"`, `"PreToolUse"`, `"SessionStart"`, `"WorktreeCreate"`, `"model"`}
	last := -1
	for _, k := range order {
		i := strings.Index(got, k)
		if i < 0 || i < last {
			t.Fatalf("%s missing or out of order in:\n%s", k, got)
		}
		last = i
	}
	var s struct {
		Permissions map[string][]string `json:"permissions"`
		Model       string              `json:"model"`
		Hooks       map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(got), &s); err != nil {
		t.Fatal(err)
	}
	if s.Model != "opus" || s.Permissions["allow"][0] != "Bash(npm test)" {
		t.Errorf("settings lost: %+v", s)
	}
	if stop := s.Hooks["Stop"]; len(stop) != 2 || stop[0].Hooks[0].Command != "./notify.sh" || stop[0].Hooks[0].Timeout != 5 || stop[1].Hooks[0].Command != "airlock hook claude stop" {
		t.Errorf("Stop groups %+v, want the user's then airlock's", stop)
	}
	if pre := s.Hooks["PreToolUse"]; len(pre) != 2 || pre[0].Matcher != "Bash" || pre[0].Hooks[0].Command != "./guard.sh" || pre[1].Hooks[0].Command != "airlock hook claude pre-tool-use" {
		t.Errorf("PreToolUse %+v, want the user's guard then airlock's", pre)
	}
	if ss := s.Hooks["SessionStart"]; len(ss) != 1 {
		t.Errorf("SessionStart %+v, want the existing airlock hook only", ss)
	}
}

// TestInitTimeouts: a SessionEnd hook an older init wrote, without a
// timeout (Claude Code then gives it 1.5 s), gets the 60 s airlock now
// writes, and only it changes; the user's own hooks keep theirs.
func TestInitTimeouts(t *testing.T) {
	w := newWorld(t, map[string]string{".claude/settings.json": `{"hooks": {
  "SessionEnd": [{"matcher": "", "hooks": [{"type": "command", "command": "./bye.sh", "timeout": 2}, {"type": "command", "command": "airlock hook claude session-end", "statusMessage": "settling"}]}]
}}`})
	r := w.run(w.base, "", nil, w.bin, "init", "claude", "--json")
	mustCode(t, r, 0)
	var out map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("init --json: %v\n%s", err, r)
	}
	if added := fmt.Sprint(out["added"]); added != "[WorktreeCreate WorktreeRemove SessionStart Stop SubagentStop PreToolUse PostToolUse]" || fmt.Sprint(out["updated"]) != "[SessionEnd]" {
		t.Errorf("init --json %v, want SessionEnd updated and the rest added", out)
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(testbin.ReadFile(t, filepath.Join(w.base, ".claude", "settings.json"))), &s); err != nil {
		t.Fatal(err)
	}
	end := s.Hooks["SessionEnd"]
	if len(end) != 1 || len(end[0].Hooks) != 2 || end[0].Hooks[0]["timeout"] != 2.0 || end[0].Hooks[1]["timeout"] != 60.0 || end[0].Hooks[1]["statusMessage"] != "settling" {
		t.Errorf("SessionEnd %+v, want the user's hook as it was and airlock's with timeout 60", end)
	}
	r = w.run(w.base, "", nil, w.bin, "init", "claude", "--json")
	mustCode(t, r, 0)
	out = nil
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil || fmt.Sprint(out["added"], out["updated"]) != "[] []" {
		t.Errorf("second run %v, want nothing added or updated", out)
	}
}

// TestInitRefusesMalformed: a settings file that is not what the agent
// documents is named, and left exactly as it was.
func TestInitRefusesMalformed(t *testing.T) {
	cases := []struct{ name, content, says string }{
		{"not JSON", "{\n  \"hooks\": {,\n", "not a JSON object"},
		{"an array", "[]", "not a JSON object"},
		{"trailing data", "{} {}", "not a JSON object"},
		{"hooks not an object", `{"hooks": []}`, `"hooks" is not a JSON object`},
		{"an event not a list", `{"hooks": {"Stop": {}}}`, `"hooks.Stop" is not a list of matcher groups`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, map[string]string{".claude/settings.json": c.content})
			path := filepath.Join(w.base, ".claude", "settings.json")
			r := w.run(w.base, "", nil, w.bin, "init", "claude")
			if r.Code != 125 || !strings.Contains(r.Stderr, "airlock: "+path+": "+c.says) || !strings.Contains(r.Stderr, "nothing was written") {
				t.Fatalf("want exit 125 naming %s and saying %q\n%s", path, c.says, r)
			}
			if testbin.ReadFile(t, path) != c.content {
				t.Error("the malformed file was changed")
			}
		})
	}
}

// TestInitSnippetsRun: the commands init writes work as the agents run
// them, through a shell in the session's directory.
func TestInitSnippetsRun(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a"})
	mustCode(t, w.run(w.base, "", nil, w.bin, "init", "claude"), 0)
	mustCode(t, w.run(w.base, "", nil, w.bin, "init", "codex"), 0)
	command := func(file, event string) string {
		var s struct {
			Hooks map[string][]struct {
				Hooks []struct{ Command string } `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal([]byte(testbin.ReadFile(t, filepath.Join(w.base, file))), &s); err != nil {
			t.Fatal(err)
		}
		return s.Hooks[event][0].Hooks[0].Command
	}
	in, _ := json.Marshal(worktreeCreate(w.base, "snippet"))
	r := w.run(w.base, string(in), []string{"CLAUDE_PROJECT_DIR=" + w.base}, "sh", "-c", command(".claude/settings.json", "WorktreeCreate"))
	mustCode(t, r, 0)
	staged := strings.TrimSuffix(r.Stdout, "\n")
	if fi, err := os.Stat(staged); err != nil || !fi.IsDir() {
		t.Fatalf("WorktreeCreate's command printed %q, not a directory\n%s", staged, r)
	}
	testbin.WriteFiles(t, staged, map[string]string{".envrc": "x"})
	in, _ = json.Marshal(codexStop(staged, false))
	r = w.run(staged, string(in), nil, "sh", "-c", command(".codex/hooks.json", "Stop"))
	mustCode(t, r, 0)
	if out := decode(t, r); out["decision"] != "block" {
		t.Errorf("Codex's Stop command: want a block\n%s", r)
	}
}

// TestInitAddsPostToolUse: settings an older init wrote (every hook but
// PostToolUse) get PostToolUse from a new init, and nothing else changes.
func TestInitAddsPostToolUse(t *testing.T) {
	i := strings.Index(claudeSettings, `,
    "PostToolUse"`)
	older := claudeSettings[:i] + "\n  }\n}\n"
	w := newWorld(t, map[string]string{".claude/settings.json": older})
	r := w.run(w.base, "", nil, w.bin, "init", "claude")
	mustCode(t, r, 0)
	path := filepath.Join(w.base, ".claude", "settings.json")
	if r.Stderr != "airlock: added airlock's PostToolUse hooks to "+path+"\n" {
		t.Errorf("init over an older init's settings\n%s", r)
	}
	if got := testbin.ReadFile(t, path); got != claudeSettings {
		t.Errorf("settings:\n%s\nwant:\n%s", got, claudeSettings)
	}
}
