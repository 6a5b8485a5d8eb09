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

// A wanted hook: the event name in the agent's settings and the airlock
// command that answers it.
type wanted struct {
	event, command string
}

// claudeHooks are written to .claude/settings.json. WorktreeCreate and
// WorktreeRemove make `claude --worktree` and isolated subagents work in
// transactions; Stop and SubagentStop check them; SessionStart says so;
// SessionEnd settles a session's transaction that no WorktreeRemove will
// (a headless `claude -p --worktree`).
var claudeHooks = []wanted{
	{"WorktreeCreate", "airlock hook claude worktree-create"},
	{"WorktreeRemove", "airlock hook claude worktree-remove"},
	{"SessionStart", "airlock hook claude session-start"},
	{"Stop", "airlock hook claude stop"},
	{"SubagentStop", "airlock hook claude subagent-stop"},
	{"SessionEnd", "airlock hook claude session-end"},
}

// codexHooks are written to .codex/hooks.json.
var codexHooks = []wanted{
	{"SessionStart", "airlock hook codex session-start"},
	{"Stop", "airlock hook codex stop"},
	{"SubagentStop", "airlock hook codex subagent-stop"},
}

// Installed says what Install did.
type Installed struct {
	Path  string   // the settings file
	Added []string // events whose airlock hook was added; none on a second run
}

// Install merges airlock's hooks for agent into the project's settings:
// PROJECT/.claude/settings.json for Claude Code, PROJECT/.codex/hooks.json
// for Codex. Every setting and hook already there is kept; an event that
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
	default:
		return nil, fmt.Errorf("unknown agent %q (want claude or codex)", agent)
	}
	path := filepath.Join(project, rel)
	old, perm, err := readSettings(path)
	if err != nil {
		return nil, err
	}
	data, added, err := mergeHooks(path, old, hooks)
	if err != nil {
		return nil, err
	}
	res := &Installed{Path: path, Added: added}
	if len(added) == 0 {
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
// as a matcher group of its own appended to the event's list, and returns
// the new file. Key order and every other value are kept.
func mergeHooks(path string, data []byte, hooks []wanted) ([]byte, []string, error) {
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
			return nil, nil, bad("not a JSON object", err)
		}
	}
	events := &object{vals: map[string]json.RawMessage{}}
	if raw, ok := root.vals["hooks"]; ok {
		var err error
		if events, err = parseObject(raw); err != nil {
			return nil, nil, bad(`"hooks" is not a JSON object`, err)
		}
	}
	var added []string
	for _, h := range hooks {
		var groups []json.RawMessage
		if raw, ok := events.vals[h.event]; ok {
			if err := json.Unmarshal(raw, &groups); err != nil {
				return nil, nil, bad(fmt.Sprintf(`"hooks.%s" is not a list of matcher groups`, h.event), err)
			}
		}
		present := false
		for _, g := range groups {
			var group struct {
				Hooks []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			}
			if err := json.Unmarshal(g, &group); err != nil {
				return nil, nil, bad(fmt.Sprintf(`a matcher group in "hooks.%s" is not an object with a "hooks" list`, h.event), err)
			}
			for _, handler := range group.Hooks {
				if runsAirlock(handler.Command, h.command) {
					present = true
				}
			}
		}
		if present {
			continue
		}
		type handler struct {
			Type    string `json:"type"`
			Command string `json:"command"`
		}
		group, err := json.Marshal(struct {
			Hooks []handler `json:"hooks"`
		}{[]handler{{"command", h.command}}})
		if err != nil {
			return nil, nil, err
		}
		groups = append(groups, group)
		raw, err := json.Marshal(groups)
		if err != nil {
			return nil, nil, err
		}
		events.set(h.event, raw)
		added = append(added, h.event)
	}
	if len(added) == 0 {
		return data, nil, nil
	}
	raw, err := events.MarshalJSON()
	if err != nil {
		return nil, nil, err
	}
	root.set("hooks", raw)
	flat, err := root.MarshalJSON()
	if err != nil {
		return nil, nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, flat, "", "  "); err != nil {
		return nil, nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), added, nil
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
