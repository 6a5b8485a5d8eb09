// Package hook answers the hook events of coding agents (Claude Code and
// Codex) for airlock, and writes airlock's hooks into an agent's project
// settings.
//
// It guarantees that each answer has the shape the agent's documentation
// gives for that event, on stdout and nowhere else (everything meant for a
// person goes to stderr); that a workspace with changes is never discarded
// by a hook; that a stop is blocked only with a reason the agent can act
// on, and not again for the same refusal of the same change set (no
// endless loop); and that merging hooks into a settings file keeps every
// setting and hook already there, is idempotent, and writes nothing when
// the existing file cannot be read as JSON.
//
// # Events
//
// Claude Code (https://code.claude.com/docs/en/hooks): WorktreeCreate opens
// a transaction over the project and prints the staged workspace's path;
// WorktreeRemove discards a transaction without changes and parks one with
// changes; Stop and SubagentStop run the commit's checks (or, configured
// so, the commit) and block with {"decision":"block","reason":…} on a
// refusal; SessionStart adds context naming the transaction, its base and
// its protected paths; SessionEnd (which a headless `claude -p --worktree`
// fires where it never fires WorktreeRemove) discards a transaction
// without changes and, with changes, commits it under `[hooks] stop =
// "commit"` or parks it.
//
// Codex (https://developers.openai.com/codex/hooks): Stop and SubagentStop
// (a thread-spawned subagent's turn ending, with Stop's semantics) always
// answer with a JSON object, {} or a block decision; SessionStart as for
// Claude.
//
// # Finding the transaction
//
// A hook's input carries the session's working directory (cwd). It
// belongs to the unsettled transaction whose staged workspace holds it, or,
// under `airlock run` (AIRLOCK_TX in the environment), to that transaction
// when cwd lies in its base as seen in the same-path view.
package hook
