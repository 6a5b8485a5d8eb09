package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock"
)

// The run tool's bounds: how long a command runs unless told otherwise and
// at most, and how much of each output stream reaches the model (a test
// run's whole log would fill its context; its start and its summary are
// what it acts on).
const (
	defaultRunTimeout = 600
	maxRunTimeout     = 3600
	runOutputLimit    = 16 << 10
)

// RunInput is the run tool's input.
type RunInput struct {
	ID             string `json:"id" jsonschema:"the transaction id"`
	Command        string `json:"command" jsonschema:"the shell command line, run with sh -c in the staged tree"`
	Dir            string `json:"dir,omitempty" jsonschema:"the directory to start in, relative to the tree's root (default: the root)"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"end the command after this many seconds (default 600, at most 3600)"`
}

// RunOutput is the run tool's structured result. The output itself is
// the result's text content only, as diff's text is.
type RunOutput struct {
	ExitCode   int      `json:"exit_code" jsonschema:"the command's exit code: 128+N after death by signal N, 127 when not found, 126 when not executable"`
	TimedOut   bool     `json:"timed_out,omitempty" jsonschema:"the command ran past timeout_seconds and was ended"`
	DurationMs int64    `json:"duration_ms"`
	StdoutCut  int64    `json:"stdout_cut,omitempty" jsonschema:"bytes of stdout dropped between its first and last 8 KiB"`
	StderrCut  int64    `json:"stderr_cut,omitempty" jsonschema:"bytes of stderr dropped between its first and last 8 KiB"`
	Dir        string   `json:"dir" jsonschema:"the absolute directory the command started in, as it saw it"`
	SamePath   bool     `json:"same_path" jsonschema:"the command saw the staged tree at the project's own path"`
	Fallback   string   `json:"fallback,omitempty" jsonschema:"why the command ran at the staged path instead of the project's"`
	Ended      []string `json:"ended,omitempty" jsonschema:"processes the command left running, which were ended"`
}

func (h *handlers) run(ctx context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, RunOutput, error) {
	if in.Command == "" {
		return nil, RunOutput{}, fmt.Errorf("transaction %s: command is empty: give the shell command line to run", in.ID)
	}
	timeout := in.TimeoutSeconds
	switch {
	case timeout == 0:
		timeout = defaultRunTimeout
	case timeout < 0 || timeout > maxRunTimeout:
		return nil, RunOutput{}, fmt.Errorf("timeout_seconds %d: want 1 to %d", timeout, maxRunTimeout)
	}
	tx, err := h.store.Tx(in.ID)
	if err != nil {
		return nil, RunOutput{}, err
	}
	end, err := h.busy.begin(tx.ID(), false)
	if err != nil {
		return nil, RunOutput{}, err
	}
	defer end()
	res, err := tx.Exec(ctx, airlock.ExecOptions{
		Argv: []string{"sh", "-c", in.Command}, Dir: in.Dir, SamePath: true,
		Timeout: time.Duration(timeout) * time.Second, OutputLimit: runOutputLimit,
	})
	var notOpen *airlock.NotOpenError
	if errors.As(err, &notOpen) {
		if notOpen.Status == airlock.StatusInterrupted {
			return nil, RunOutput{}, fmt.Errorf("%w; the user has to run `airlock recover --workdir %s` first (no tool here does it)", err, tx.Base())
		}
		return nil, RunOutput{}, fmt.Errorf("%w; open a new transaction (the open tool) to run commands", err)
	}
	if err != nil {
		return nil, RunOutput{}, err
	}
	root := tx.Path()
	if res.SamePath {
		root = tx.Base()
	}
	out := RunOutput{
		ExitCode: res.ExitCode, TimedOut: res.TimedOut, DurationMs: res.Duration.Milliseconds(),
		StdoutCut: res.StdoutCut, StderrCut: res.StderrCut, Dir: joinDir(root, in.Dir),
		SamePath: res.SamePath, Fallback: res.Fallback, Ended: res.Ended,
	}
	return &mcp.CallToolResult{Content: runContent(res, timeout)}, out, nil
}

// runContent is what the model reads: a line saying how the command
// ended, then its stdout and its stderr, each as it wrote them (bytes that
// are not UTF-8 become U+FFFD: the content is JSON text).
func runContent(res *airlock.ExecResult, timeout int) []mcp.Content {
	head := fmt.Sprintf("exit %d", res.ExitCode)
	if res.TimedOut {
		head = fmt.Sprintf("ended after the %d s timeout (exit %d)", timeout, res.ExitCode)
	}
	content := []mcp.Content{&mcp.TextContent{Text: head + "\n"}}
	for _, stream := range []struct {
		name string
		b    []byte
		cut  int64
	}{{"stdout", res.Stdout, res.StdoutCut}, {"stderr", res.Stderr, res.StderrCut}} {
		if len(stream.b) == 0 {
			continue
		}
		text := stream.name + ":\n" + string(stream.b)
		if stream.cut > 0 {
			half := (len(stream.b) + 1) / 2
			text = stream.name + ":\n" + string(stream.b[:half]) + fmt.Sprintf("\n[… %d bytes cut …]\n", stream.cut) + string(stream.b[half:])
		}
		content = append(content, &mcp.TextContent{Text: text})
	}
	return content
}

// joinDir is dir (slash-separated, relative) under root.
func joinDir(root, dir string) string {
	if dir == "" || dir == "." {
		return root
	}
	return root + "/" + dir
}

// busy are the transactions with a call in flight that must not overlap
// another: a commit or discard reads and drops the staged tree, which a
// running command writes. Runs may overlap each other (a server and its
// test), and settles each other (the transaction's lock orders them).
type busy struct {
	mu sync.Mutex
	// runs and settles count the calls in flight by transaction.
	runs, settles map[string]int
}

// begin marks a call on tx in flight, or says what it would overlap; end
// unmarks it.
func (b *busy) begin(tx string, settle bool) (end func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runs == nil {
		b.runs, b.settles = map[string]int{}, map[string]int{}
	}
	mine, other := b.runs, b.settles
	if settle {
		mine, other = b.settles, b.runs
	}
	switch {
	case settle && other[tx] > 0:
		return nil, fmt.Errorf("transaction %s: %d run call(s) in it still running; commit or discard once they have returned (or cancel them)", tx, other[tx])
	case other[tx] > 0:
		return nil, fmt.Errorf("transaction %s: a commit or discard of it is in flight; nothing runs in it until that has returned", tx)
	}
	mine[tx]++
	return func() {
		b.mu.Lock()
		if mine[tx]--; mine[tx] == 0 {
			delete(mine, tx)
		}
		b.mu.Unlock()
	}, nil
}
