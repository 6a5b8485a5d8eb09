package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/buildinfo"
)

func newVersionCmd(io IO) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print airlock's version, commit and Go version (as --version does)",
		Long: `version prints the module version, the commit the binary was built from
(and "dirty" when its tree had uncommitted changes) and the Go toolchain and
platform, all read from the binary's build information. The MCP server
reports the same version to its clients.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			in := buildinfo.Get()
			if asJSON {
				return writeJSON(io, in)
			}
			fmt.Fprintln(io.Out, in)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print {version, commit, commit_time, dirty, go, platform} as JSON")
	return c
}
