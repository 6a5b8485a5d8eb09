package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/mcpserver"
)

func newMCPCmd(io IO) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "An MCP server on stdio: open, status, list, diff, run, commit, discard, checkpoint, rewind",
		Long: `mcp serves airlock's transactions to an agent over the Model Context Protocol
on stdin and stdout (newline-delimited JSON-RPC); diagnostics go to stderr.
Its tools: open, status, list, diff, run, commit, discard, checkpoint and
rewind. run runs a shell command in an open transaction's staged tree (at
the project's path where it can, with a timeout and its output cut) and
leaves the transaction open; checkpoint records that tree and rewind puts it
back to a checkpoint. A refused commit is a structured result (outcome "refused", refusal
kind, paths, reason). The commit tool's approve: true asks the user (MCP
elicitation) before protected changes land; without a client that can ask,
only the user's airlock review or airlock commit --approve lands them.
Every call read before stdin closes is answered before the server exits.
SIGINT or SIGTERM stops the server once the calls in flight have ended.

  claude mcp add airlock -- airlock mcp`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := store()
			if err != nil {
				return err
			}
			t := &mcp.IOTransport{Reader: readCloser{io.In}, Writer: writeCloser{io.Out}}
			ctx, stopped := untilSignal(c.Context())
			err = mcpserver.Serve(ctx, st, t)
			if s := stopped(); s != 0 {
				// The server stopped taking calls and let those in
				// flight end: a commit before its journal as cancelled,
				// one past it run to its end.
				return &exitError{code: 128 + int(s), msg: "mcp: stopped by " + unix.SignalName(s)}
			}
			return err
		},
	}
}

// untilSignal is ctx, cancelled when SIGINT or SIGTERM (unless ignored)
// reaches this process; stopped reports which did, 0 when none. After
// the first, the signals have their default effect again.
func untilSignal(parent context.Context) (ctx context.Context, stopped func() syscall.Signal) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	signal.Notify(ch, sigs...)
	var got atomic.Int32
	go func() {
		select {
		case s := <-ch:
			got.Store(int32(s.(syscall.Signal)))
			cancel()
		case <-ctx.Done():
		}
		signal.Stop(ch)
	}()
	return ctx, func() syscall.Signal { return syscall.Signal(got.Load()) }
}

// readCloser and writeCloser give the command's streams the Close the
// transport calls; the streams themselves belong to the process.
type readCloser struct{ io.Reader }

func (readCloser) Close() error { return nil }

type writeCloser struct{ io.Writer }

func (writeCloser) Close() error { return nil }
