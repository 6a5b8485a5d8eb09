package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/hook"
)

func newHookCmd(io IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "hook claude|codex|gemini EVENT",
		Short: "Hook handlers for agent tools (stdin JSON in, their documented answer out)",
		Long: `hook answers an agent tool's hook event: it reads the event's JSON on stdin
and writes the answer the tool documents on stdout; messages for a person go
to stderr. ` + "`airlock init claude|codex|gemini`" + ` writes these hooks into a project.

Claude Code events:
  worktree-create   open a transaction over the project for --worktree or an
                    isolated subagent; print only the staged path
  worktree-remove   discard a transaction without changes; park one with
                    changes (kept, and said so)
  stop              run the commit's checks and validation (or, with
  subagent-stop     [hooks] stop = "commit", commit); block on a refusal
  session-start     tell the agent which transaction it is in
  session-end       settle the session's transaction: discard it without
                    changes; with changes commit it ([hooks] stop =
                    "commit") or park it
  pre-tool-use      deny a tool call that writes in the transaction's base
                    outside its staged workspace; leave every other alone
  post-tool-use     checkpoint a worktree session's transaction after a
                    tool call that wrote (airlock rewind ID N goes back)

Codex events:
  stop              as for Claude; always answers a JSON object
  subagent-stop     as stop, for a thread-spawned subagent
  session-start     as for Claude
  session-end       as for Claude
  pre-tool-use      as for Claude (Bash and apply_patch); always answers a
                    JSON object

Gemini CLI events:
  after-agent       as stop: a block makes Gemini retry with the reason
  session-start     as for Claude
  before-tool       as pre-tool-use (write_file, replace, run_shell_command)
Gemini CLI reads every answer as a JSON object ({} when there is nothing).`,
		Args: cobra.ExactArgs(2),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			switch len(args) {
			case 0:
				return []cobra.Completion{"claude", "codex", "gemini"}, cobra.ShellCompDirectiveNoFileComp
			case 1:
				return hook.Events[hook.Agent(args[0])], cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runHook(c.Context(), io, hookOptions{agent: hook.Agent(args[0]), event: args[1]})
		},
	}
	return c
}

// hookOptions are hook's arguments.
type hookOptions struct {
	agent hook.Agent
	event string
}

func runHook(ctx context.Context, io IO, o hookOptions) error {
	st, err := store()
	if err != nil {
		return err
	}
	r := &hook.Runner{Store: st, Out: io.Out, Err: io.Err, Getenv: os.Getenv}
	return r.Run(ctx, o.agent, o.event, io.In)
}
