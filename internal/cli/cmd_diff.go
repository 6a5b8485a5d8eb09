package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock"
)

func newDiffCmd(io IO) *cobra.Command {
	var stat, nameStatus, asJSON bool
	c := &cobra.Command{
		Use:   "diff ID [--stat|--name-status]",
		Short: "The change set as a git-style patch (binary-aware; `git apply --binary` accepts it)",
		Args:  oneID,
		RunE: func(c *cobra.Command, args []string) error {
			if stat && nameStatus {
				return errors.New("--stat and --name-status cannot be combined")
			}
			st, err := store()
			if err != nil {
				return err
			}
			tx, err := st.Tx(args[0])
			if err != nil {
				return err
			}
			format, name := airlock.DiffPatch, "patch"
			switch {
			case stat:
				format, name = airlock.DiffStat, "stat"
			case nameStatus:
				format, name = airlock.DiffNameStatus, "name-status"
			}
			if asJSON {
				var text strings.Builder
				notes, err := tx.Diff(c.Context(), &text, format)
				if err != nil {
					return err
				}
				return writeJSON(io, map[string]any{"tx": tx.ID(), "format": name, "text": text.String(), "notes": nonNil(notes)})
			}
			out := bufio.NewWriter(io.Out)
			notes, err := tx.Diff(c.Context(), out, format)
			if ferr := out.Flush(); err == nil {
				err = ferr
			}
			for _, n := range notes {
				fmt.Fprintf(io.Err, "airlock: not in the patch: %s\n", n)
			}
			return err
		},
	}
	c.Flags().BoolVar(&stat, "stat", false, "print a diffstat, like git diff --stat")
	c.Flags().BoolVar(&nameStatus, "name-status", false, "print A/M/D/T and the path of each change, like git diff --name-status")
	c.Flags().BoolVar(&asJSON, "json", false, "print {tx, format, text, notes} as JSON: text is the patch, stat or name-status")
	return c
}
