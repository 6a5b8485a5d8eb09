package hook_test

import (
	"encoding/json"
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
            "command": "airlock hook claude session-end"
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
		{"claude", ".claude/settings.json", claudeSettings, "WorktreeCreate, WorktreeRemove, SessionStart, Stop, SubagentStop, SessionEnd"},
		{"codex", ".codex/hooks.json", codexHooks, "SessionStart, Stop, SubagentStop"},
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
	if !strings.Contains(r.Stderr, "added airlock's WorktreeCreate, WorktreeRemove, Stop, SubagentStop, SessionEnd hooks") {
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
	if pre := s.Hooks["PreToolUse"]; len(pre) != 1 || pre[0].Matcher != "Bash" {
		t.Errorf("PreToolUse %+v", pre)
	}
	if ss := s.Hooks["SessionStart"]; len(ss) != 1 {
		t.Errorf("SessionStart %+v, want the existing airlock hook only", ss)
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
