package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newCompletionCmd(io IO) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `completion prints a completion script for the shell named. Load it with

  bash:  source <(airlock completion bash)
         (or write it to ~/.local/share/bash-completion/completions/airlock;
         bash needs the bash-completion package for either)
  zsh:   airlock completion zsh > "${fpath[1]}/_airlock"
  fish:  airlock completion fish > ~/.config/fish/completions/airlock.fish

Commands that take a transaction id complete the ids of the transactions
in the state directory; --backend completes its values.`,
		ValidArgs:             []string{"bash", "zsh", "fish"},
		Args:                  cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		DisableFlagsInUseLine: true,
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(io.Out, true)
			case "zsh":
				return root.GenZshCompletion(io.Out)
			case "fish":
				return root.GenFishCompletion(io.Out, true)
			}
			return fmt.Errorf("unknown shell %q (want bash, zsh or fish)", args[0])
		},
	}
}

// completeTxIDs makes the commands that take transaction ids complete
// them from the state directory: settled ones too for the commands that
// read them (show, diff, receipt), only unsettled ones for those that
// settle (commit, discard, land).
func completeTxIDs(root *cobra.Command) {
	for _, c := range root.Commands() {
		var all, many bool
		switch c.Name() {
		case "commit", "discard":
		case "land":
			many = true
		case "show", "diff", "undo", "review":
			all = true
		default:
			continue
		}
		if c.ValidArgsFunction != nil {
			continue
		}
		c.ValidArgsFunction = func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 && !many {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return txIDs(c, all), cobra.ShellCompDirectiveNoFileComp
		}
	}
}

func txIDs(c *cobra.Command, all bool) []cobra.Completion {
	st, err := store()
	if err != nil {
		return nil
	}
	// Status and base only: a completion must not walk staged trees.
	ids, err := st.IDs()
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, id := range ids {
		tx, err := st.Tx(id)
		if err != nil {
			continue
		}
		status, err := tx.Status()
		if err != nil || (!all && status.Settled()) {
			continue
		}
		out = append(out, cobra.CompletionWithDesc(id, string(status)+" "+tx.Base()))
	}
	return out
}
