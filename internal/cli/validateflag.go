package cli

import "github.com/spf13/cobra"

// validateHelp is the --validate flag's help wherever it appears.
const validateHelp = "before commit, run `CMD` via sh -c in a candidate tree (base + change set); non-zero refuses (default: validate in .airlock.toml; --validate='' for none)"

// noValidate reports an explicitly empty --validate, which turns off the
// project config's validate command for this commit. An absent flag leaves
// it on: the config is the project's default, and dropping it must be
// said out loud.
func noValidate(c *cobra.Command) bool {
	f := c.Flags().Lookup("validate")
	return f != nil && f.Changed && f.Value.String() == ""
}
