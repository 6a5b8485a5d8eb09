package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Input is the JSON object an agent writes to a command hook's stdin: the
// fields common to every event and those of the events airlock answers.
// Unknown fields are ignored, so newer agents keep working.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	PermissionMode string `json:"permission_mode"`

	// WorktreeCreate: the worktree's slug. The reference documents name;
	// some Claude Code builds sent worktree_name.
	Name         string `json:"name"`
	WorktreeName string `json:"worktree_name"`
	// WorktreeRemove: the path WorktreeCreate printed.
	WorktreePath string `json:"worktree_path"`
	// Stop, SubagentStop: whether the agent is already continuing because
	// a stop hook blocked.
	StopHookActive bool `json:"stop_hook_active"`
	// SessionStart: startup, resume, clear or compact.
	Source string `json:"source"`
	// SessionEnd: clear, resume, logout, prompt_input_exit,
	// bypass_permissions_disabled or other.
	Reason string `json:"reason"`
	// PreToolUse (Claude Code, Codex), BeforeTool (Gemini CLI): the tool
	// and its arguments as the model gave them.
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	// Inside a subagent.
	AgentID   string `json:"agent_id"`
	AgentType string `json:"agent_type"`
}

// ReadInput decodes one JSON object from r. It does not wait for the end
// of the stream: an agent that keeps stdin open must not hang the hook.
func ReadInput(r io.Reader) (*Input, error) {
	var in Input
	dec := json.NewDecoder(r)
	if err := dec.Decode(&in); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no hook input on stdin: the agent passes a JSON object there")
		}
		return nil, fmt.Errorf("hook input on stdin is not a JSON object: %w", err)
	}
	return &in, nil
}

// worktreeName is the slug WorktreeCreate was given.
func (in *Input) worktreeName() string {
	if in.Name != "" {
		return in.Name
	}
	return in.WorktreeName
}
