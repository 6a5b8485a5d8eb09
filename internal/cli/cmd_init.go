package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/hook"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// initOptions are init's argument and flags.
type initOptions struct {
	agent   string // claude, codex or gemini
	workdir string
	json    bool
}

func newInitCmd(io IO) *cobra.Command {
	var o initOptions
	c := &cobra.Command{
		Use:   "init claude|codex|gemini",
		Short: "Write airlock's hooks into the agent's project settings",
		Long: `init merges airlock's hooks into the project's settings for the agent.
Every event each agent gets:

  claude   .claude/settings.json: WorktreeCreate, WorktreeRemove, SessionStart,
           Stop, SubagentStop, SessionEnd (timeout 60 s: Claude Code gives
           it 1.5 s otherwise) and PreToolUse (for Write, Edit, MultiEdit,
           NotebookEdit and Bash; timeout 30 s)
  codex    .codex/hooks.json: SessionStart, Stop, SubagentStop, SessionEnd
           and PreToolUse
  gemini   .gemini/settings.json: SessionStart, AfterAgent (timeout 600 s)
           and BeforeTool (for write_file, replace and run_shell_command;
           timeout 30 s)

Settings and hooks already there are kept, and running init again changes
nothing; an airlock hook an older init wrote without the timeout it needs
gets it. A settings file that is not valid JSON is reported and left as it
is. The hooks run ` + "`airlock`" + ` from PATH.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"claude", "codex", "gemini"},
		RunE: func(c *cobra.Command, args []string) error {
			o.agent = args[0]
			return runInit(io, o)
		},
	}
	c.Flags().StringVar(&o.workdir, "workdir", "", "the project directory (default: the current directory)")
	c.Flags().BoolVar(&o.json, "json", false, "print {agent, path, added, updated} as JSON instead of the sentence on stderr")
	return c
}

func runInit(io IO, o initOptions) error {
	dir := o.workdir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("current directory: %w", err)
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("project %s is not a directory", dir)
	}
	res, err := hook.Install(hook.Agent(o.agent), dir)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(io, jsonout.Init{Added: jsonout.NonNil(res.Added), Agent: o.agent, Path: res.Path, Updated: jsonout.NonNil(res.Updated)})
	}
	if len(res.Added) == 0 && len(res.Updated) == 0 {
		fmt.Fprintf(io.Err, "airlock: %s already runs airlock's hooks; nothing changed\n", res.Path)
		return nil
	}
	if len(res.Added) > 0 {
		fmt.Fprintf(io.Err, "airlock: added airlock's %s hooks to %s\n", strings.Join(res.Added, ", "), res.Path)
	}
	if len(res.Updated) > 0 {
		fmt.Fprintf(io.Err, "airlock: gave airlock's %s hooks in %s the timeouts they need\n", strings.Join(res.Updated, ", "), res.Path)
	}
	return nil
}
