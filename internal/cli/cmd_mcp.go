package cli

import (
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/mcpserver"
)

func newMCPCmd(io IO) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "An MCP server on stdio: open, status, list, diff, commit, discard",
		Long: `mcp serves airlock's transactions to an agent over the Model Context Protocol
on stdin and stdout (newline-delimited JSON-RPC); diagnostics go to stderr.
Its tools: open, status, list, diff, commit and discard. A refused commit is
a structured result (outcome "refused", refusal kind, paths, reason).

  claude mcp add airlock -- airlock mcp`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			t := &mcp.IOTransport{Reader: readCloser{io.In}, Writer: writeCloser{io.Out}}
			return mcpserver.Serve(c.Context(), st, t)
		},
	}
}

// readCloser and writeCloser give the command's streams the Close the
// transport calls; the streams themselves belong to the process.
type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

type writeCloser struct{ io.Writer }

func (writeCloser) Close() error { return nil }
