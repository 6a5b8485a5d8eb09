package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/safefs"
)

// A wanted hook: the event name in the agent's settings, the airlock
// command that answers it, the tools it is for (a matcher; "" for all)
// and how long the agent lets it run (in the agent's unit; 0 for its
// default).
type wanted struct {
	event, command, matcher string
	timeout                 int
}

// claudeHooks are written to .claude/settings.json. WorktreeCreate and
// WorktreeRemove make `claude --worktree` and isolated subagents work in
// transactions; Stop and SubagentStop check them; SessionStart says so;
// SessionEnd settles a session's transaction that no WorktreeRemove will
// (a headless `claude -p --worktree`); PreToolUse keeps the file tools and
// Bash off the base.
//
// Timeouts are in seconds. Claude Code gives a SessionEnd hook 1.5 s
// unless one names a longer timeout, and 60 s at most (Claude Code
// 2.1.197: max(1500, min(longest SessionEnd timeout × 1000, 60000)) ms),
// then SIGTERM: a commit that validates needs the 60. Other hooks get 600
// s by default, which a Stop's validation may need, and which a guard that
// hung would hold every tool call for: the guard gets 30 (it takes
// milliseconds), and on a timeout Claude Code runs the call, which is
// what a guard that cannot decide should let happen.
var claudeHooks = []wanted{
	{"WorktreeCreate", "airlock hook claude worktree-create", "", 0},
	{"WorktreeRemove", "airlock hook claude worktree-remove", "", 0},
	{"SessionStart", "airlock hook claude session-start", "", 0},
	{"Stop", "airlock hook claude stop", "", 0},
	{"SubagentStop", "airlock hook claude subagent-stop", "", 0},
	{"SessionEnd", "airlock hook claude session-end", "", 60},
	{"PreToolUse", "airlock hook claude pre-tool-use", "Write|Edit|MultiEdit|NotebookEdit|Bash", 30},
	// A checkpoint after each call that may have written the workspace
	// (posttooluse.go); it waits at most checkpointWait for the lock.
	{"PostToolUse", "airlock hook claude post-tool-use", "Write|Edit|MultiEdit|Bash", 30},
}

// codexHooks are written to .codex/hooks.json. PreToolUse has no matcher:
// the guard answers {} for a tool it does not know, quickly.
var codexHooks = []wanted{
	{"SessionStart", "airlock hook codex session-start", "", 0},
	{"Stop", "airlock hook codex stop", "", 0},
	{"SubagentStop", "airlock hook codex subagent-stop", "", 0},
	{"SessionEnd", "airlock hook codex session-end", "", 0},
	{"PreToolUse", "airlock hook codex pre-tool-use", "", 0},
}

// geminiHooks are written to .gemini/settings.json. Timeouts are in
// milliseconds; Gemini CLI's default, 60000, is short for AfterAgent's
// validation, which gets Claude Code's 600 s. Gemini CLI's SessionEnd is
// not waited for, and its sessions open no transaction of their own, so
// none is installed.
var geminiHooks = []wanted{
	{"SessionStart", "airlock hook gemini session-start", "", 0},
	{"AfterAgent", "airlock hook gemini after-agent", "", 600000},
	{"BeforeTool", "airlock hook gemini before-tool", "^(write_file|replace|run_shell_command)$", 30000},
}

// Installed says what Install did.
type Installed struct {
	Path  string   // the settings file
	Added []string // events whose airlock hook was added; none on a second run
	// Updated are events whose airlock hook was there without the
	// timeout airlock now writes (an older init), and got it.
	Updated []string
}

// Install merges airlock's hooks for agent into the project's settings:
// PROJECT/.claude/settings.json for Claude Code, PROJECT/.codex/hooks.json
// for Codex, PROJECT/.gemini/settings.json for Gemini CLI. Every setting and hook already there is kept; an event that
// already runs airlock's hook is left as it is. A file that is not a JSON
// object (or whose hooks are not shaped as the agent documents) is an
// error naming it, and nothing is written.
func Install(agent Agent, project string) (*Installed, error) {
	var rel string
	var hooks []wanted
	switch agent {
	case Claude:
		rel, hooks = filepath.Join(".claude", "settings.json"), claudeHooks
	case Codex:
		rel, hooks = filepath.Join(".codex", "hooks.json"), codexHooks
	case Gemini:
		rel, hooks = filepath.Join(".gemini", "settings.json"), geminiHooks
	default:
		return nil, fmt.Errorf("unknown agent %q (want claude, codex or gemini)", agent)
	}
	path := filepath.Join(project, rel)
	old, perm, err := readSettings(path)
	if err != nil {
		return nil, err
	}
	data, added, updated, err := mergeHooks(path, old, hooks)
	if err != nil {
		return nil, err
	}
	res := &Installed{Path: path, Added: added, Updated: updated}
	if len(added) == 0 && len(updated) == 0 {
		return res, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := safefs.WriteFile(path, data, perm); err != nil {
		return nil, err
	}
	return res, nil
}

// readSettings reads a settings file that may not exist yet.
func readSettings(path string) ([]byte, os.FileMode, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0o644, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file; fix or remove it, then run init again", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	return data, fi.Mode().Perm(), nil
}

// mergeHooks adds each wanted hook whose event does not already run it,
// as a matcher group of its own appended to the event's list, gives an
// airlock hook already there the timeout wanted if it has another, and
// returns the new file. Key order and every other value are kept.
func mergeHooks(path string, data []byte, hooks []wanted) ([]byte, []string, []string, error) {
	bad := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %s (%v); fix it by hand, then run init again: nothing was written", path, what, err)
		}
		return fmt.Errorf("%s: %s; fix it by hand, then run init again: nothing was written", path, what)
	}
	root := &object{vals: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(data)) > 0 {
		var err error
		if root, err = parseObject(data); err != nil {
			return nil, nil, nil, bad("not a JSON object", err)
		}
	}
	events := &object{vals: map[string]json.RawMessage{}}
	if raw, ok := root.vals["hooks"]; ok {
		var err error
		if events, err = parseObject(raw); err != nil {
			return nil, nil, nil, bad(`"hooks" is not a JSON object`, err)
		}
	}
	var added, updated []string
	for _, h := range hooks {
		var groups []json.RawMessage
		if raw, ok := events.vals[h.event]; ok {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, nil, nil, bad(fmt.Sprintf(`"hooks.%s" is not a list of matcher groups`, h.event), err)
			}
		}
		present, changed := false, false
		for i, g := range groups {
			group, err := parseObject(g)
			if err != nil {
				return nil, nil, nil, bad(fmt.Sprintf(`a matcher group in "hooks.%s" is not an object with a "hooks" list`, h.event), err)
			}
			var handlers []json.RawMessage
			if err := json.Unmarshal(group.vals["hooks"], &handlers); err != nil {
				return nil, nil, nil, bad(fmt.Sprintf(`a matcher group in "hooks.%s" is not an object with a "hooks" list`, h.event), err)
			}
			groupChanged := false
			for j, raw := range handlers {
				var handler struct {
					Command string          `json:"command"`
					Timeout json.RawMessage `json:"timeout"`
				}
				if err := json.Unmarshal(raw, &handler); err != nil {
					return nil, nil, nil, bad(fmt.Sprintf(`a hook in "hooks.%s" is not an object`, h.event), err)
				}
				if !runsAirlock(handler.Command, h.command) {
					continue
				}
				present = true
				if h.timeout == 0 || string(handler.Timeout) == fmt.Sprint(h.timeout) {
					continue
				}
				o, err := parseObject(raw)
				if err != nil {
					return nil, nil, nil, bad(fmt.Sprintf(`a hook in "hooks.%s" is not an object`, h.event), err)
				}
				o.set("timeout", json.RawMessage(fmt.Sprint(h.timeout)))
				if handlers[j], err = o.MarshalJSON(); err != nil {
					return nil, nil, nil, err
				}
				groupChanged = true
			}
			if groupChanged {
				raw, err := json.Marshal(handlers)
				if err != nil {
					return nil, nil, nil, err
				}
				group.set("hooks", raw)
				if groups[i], err = group.MarshalJSON(); err != nil {
					return nil, nil, nil, err
				}
				changed = true
			}
		}
		switch {
		case present && changed:
			updated = append(updated, h.event)
		case present:
			continue
		default:
			group, err := newGroup(h)
			if err != nil {
				return nil, nil, nil, err
			}
			groups = append(groups, group)
			added = append(added, h.event)
		}
		raw, err := json.Marshal(groups)
		if err != nil {
			return nil, nil, nil, err
		}
		events.set(h.event, raw)
	}
	if len(added) == 0 && len(updated) == 0 {
		return data, nil, nil, nil
	}
	raw, err := events.MarshalJSON()
	if err != nil {
		return nil, nil, nil, err
	}
	root.set("hooks", raw)
	flat, err := root.MarshalJSON()
	if err != nil {
		return nil, nil, nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, flat, "", "  "); err != nil {
		return nil, nil, nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), added, updated, nil
}

// newGroup is the matcher group that runs h.
func newGroup(h wanted) (json.RawMessage, error) {
	type handler struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout,omitempty"`
	}
	return json.Marshal(struct {
		Matcher string    `json:"matcher,omitempty"`
		Hooks   []handler `json:"hooks"`
	}{h.matcher, []handler{{"command", h.command, h.timeout}}})
}

// runsAirlock reports whether a hook command is airlock's own, perhaps
// through an absolute path to the binary.
func runsAirlock(command, want string) bool {
	if command == want {
		return true
	}
	sub := strings.TrimPrefix(want, "airlock ")
	c := strings.TrimSpace(command)
	return strings.HasSuffix(c, " "+sub) && strings.Contains(c, "airlock")
}

// object is a JSON object that keeps its keys in order, so that a merged
// settings file reads like the one the user wrote.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func parseObject(data []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("found %v where an object should start", tok)
	}
	o := &object{vals: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("found %v where a key should be", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		o.set(key, raw)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return o, nil
}

func (o *object) set(key string, raw json.RawMessage) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = raw
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
