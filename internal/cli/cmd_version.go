package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/buildinfo"
)

// versionOptions are version's flag.
type versionOptions struct {
	json bool
}

func newVersionCmd(io IO) *cobra.Command {
	var o versionOptions
	c := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print airlock's version, commit and Go version (as --version does)",
		Long: `version prints the module version, the commit the binary was built from
(and "dirty" when its tree had uncommitted changes) and the Go toolchain and
platform, all read from the binary's build information. The MCP server
reports the same version to its clients.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runVersion(io, o)
		},
	}
	c.Flags().BoolVar(&o.json, "json", false, "print {version, commit, commit_time, dirty, go, platform} as JSON")
	return c
}

func runVersion(io IO, o versionOptions) error {
	in := buildinfo.Get()
	if o.json {
		return writeJSON(io, in)
	}
	fmt.Fprintln(io.Out, in)
	return nil
}
