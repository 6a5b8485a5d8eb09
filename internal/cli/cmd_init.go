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
	agent   string // claude or codex
	workdir string
	json    bool
}

func newInitCmd(io IO) *cobra.Command {
	var o initOptions
	c := &cobra.Command{
		Use:   "init claude|codex",
		Short: "Write airlock's hooks into the agent's project settings",
		Long: `init merges airlock's hooks into the project's settings for the agent:

  claude   .claude/settings.json: WorktreeCreate, WorktreeRemove, SessionStart,
           Stop and SubagentStop
  codex    .codex/hooks.json: SessionStart and Stop

Settings and hooks already there are kept, and running init again changes
nothing. A settings file that is not valid JSON is reported and left as it
is. The hooks run ` + "`airlock`" + ` from PATH.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"claude", "codex"},
		RunE: func(c *cobra.Command, args []string) error {
			o.agent = args[0]
			return runInit(io, o)
		},
	}
	c.Flags().StringVar(&o.workdir, "workdir", "", "the project directory (default: the current directory)")
	c.Flags().BoolVar(&o.json, "json", false, "print {agent, path, added} as JSON instead of the sentence on stderr")
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
		return writeJSON(io, jsonout.Init{Added: jsonout.NonNil(res.Added), Agent: o.agent, Path: res.Path})
	}
	if len(res.Added) == 0 {
		fmt.Fprintf(io.Err, "airlock: %s already runs airlock's hooks; nothing changed\n", res.Path)
		return nil
	}
	fmt.Fprintf(io.Err, "airlock: added airlock's %s hooks to %s\n", strings.Join(res.Added, ", "), res.Path)
	return nil
}
