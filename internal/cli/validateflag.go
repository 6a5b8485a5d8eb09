package cli

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
)

// validateHelp is the --validate flag's help wherever it appears.
const validateHelp = "add a validator: before commit, run `CMD` via sh -c in a candidate tree (base + change set), after the project's validate from .airlock.toml, which always runs; non-zero refuses"

// errNoValidate answers an explicitly empty --validate. It used to turn
// the project's validate off; nothing does now (docs/reference.md: a gate no caller
// lowers), and a person who asks for that must hear so rather than see the
// validator run anyway.
var errNoValidate = errors.New(`--validate "": the project's validate (validate in the base's .airlock.toml) always runs and cannot be turned off; --validate only adds a validator. Leave it out, or change validate in .airlock.toml (a protected path): the change applies to transactions opened after it lands`)

// checkValidate refuses an explicitly empty --validate before anything is
// opened or settled.
func checkValidate(c *cobra.Command) error {
	f := c.Flags().Lookup("validate")
	if f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
		return errNoValidate
	}
	return nil
}
