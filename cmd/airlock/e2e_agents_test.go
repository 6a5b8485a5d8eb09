package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EMCPStdio: `airlock mcp` spoken to over its stdin and stdout by the
// SDK's client, as an agent configured with `claude mcp add airlock --
// airlock mcp` would: open, write into the staged path, diff, a refused
// commit as a structured result, a commit the user approves (asked through
// the client) that lands, and a clean exit when the client hangs up.
func TestE2EMCPStdio(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"main.go": F(0o644, "package main\n")})
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := testbin.Cmd{Bin: airlockBin, Args: []string{"mcp"}, Dir: x.base, Env: x.environ()}.Command(ctx)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	asked := 0
	user := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, user).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to airlock mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	if got := cs.InitializeResult().ServerInfo.Name; got != "airlock" {
		t.Errorf("server name %q", got)
	}
	call := func(name string, args map[string]any) (map[string]any, string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v\nstderr:\n%s", name, err, stderr.String())
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		if res.IsError {
			t.Fatalf("%s: tool error: %s", name, text.String())
		}
		out, _ := res.StructuredContent.(map[string]any)
		return out, text.String()
	}

	// A relative path is the server's working directory: the project.
	o, _ := call("open", map[string]any{"path": "."})
	id, staged := o["id"].(string), o["path"].(string)
	if id == "" || !filepath.IsAbs(staged) || o["base"] != x.base {
		t.Fatalf("open: %v", o)
	}
	writeFile(t, filepath.Join(staged, "main.go"), "package main\n\nfunc main() {}\n")
	writeFile(t, filepath.Join(staged, ".envrc"), "export X=1\n")

	_, patch := call("diff", map[string]any{"id": id})
	if !strings.Contains(patch, "+func main() {}") || !strings.Contains(patch, "+++ b/.envrc") {
		t.Errorf("diff:\n%s", patch)
	}
	s, _ := call("commit", map[string]any{"id": id})
	if s["outcome"] != "refused" || s["refusal"] != "ProtectedPathNotApproved" {
		t.Errorf("commit touching .envrc: %v", s)
	}
	if reason, _ := s["reason"].(string); !strings.Contains(reason, "approve: true") {
		t.Errorf("the refusal's remedy is not said as the tool's argument: %q", reason)
	}
	if paths, _ := json.Marshal(s["refused_paths"]); string(paths) != `[".envrc"]` {
		t.Errorf("refused paths %s", paths)
	}
	if testbin.ReadFile(t, filepath.Join(x.base, "main.go")) != "package main\n" {
		t.Fatal("a refused commit changed the base")
	}
	s, _ = call("commit", map[string]any{"id": id, "approve": true})
	if s["outcome"] != "committed" || asked != 1 {
		t.Fatalf("approved commit: %v, the user asked %d times", s, asked)
	}
	wantTree(t, "base after the MCP commit", tree{
		"main.go": F(0o644, "package main\n\nfunc main() {}\n"), ".envrc": F(0o644, "export X=1\n"),
	}, snapshot(t, x.base, nil))

	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\nstderr:\n%s", err, stderr.String())
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("airlock mcp did not exit 0 when the client hung up: %v\nstderr:\n%s", cmd.ProcessState, stderr.String())
	}
	r := x.airlock("show", id, "--json")
	wantCode(t, r, 0)
	if !strings.Contains(r.Stdout, `"status": "committed"`) {
		t.Errorf("show after the MCP commit:\n%s", r)
	}
}

// TestE2EProjectConfig: .airlock.toml through the CLI. A malformed one is
// exit 125 with the file, line and key; its validate runs at every commit
// of run, commit, land and review, and no flag turns it off: --validate
// only adds a validator, and an empty --validate is refused, saying why.
func TestE2EProjectConfig(t *testing.T) {
	t.Run("malformed", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{".airlock.toml": F(0o644, "exclude = [\"a\"]\n\n[hooks]\nstop = \"sometimes\"\n")})
		for _, args := range [][]string{{"open", "--workdir", x.base}, {"run", "--workdir", x.base, "--", "true"}} {
			r := x.airlock(args...)
			wantCode(t, r, 125)
			want := filepath.Join(x.base, ".airlock.toml") + `:4: key "hooks.stop": unknown stop behaviour "sometimes"`
			if !strings.Contains(r.Stderr, want) {
				t.Errorf("stderr does not say %q\n%s", want, r)
			}
		}
	})
	t.Run("validate", func(t *testing.T) {
		x := newH(t)
		cfg := "validate = \"test ! -e broken\"\nexclude = [\"*.log\"]\n"
		build(t, x.base, tree{".airlock.toml": F(0o644, cfg), "a.log": F(0o644, "log\n")})
		r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "touch broken; test ! -e a.log")
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ValidationFailed"})
		id := r.Settle["tx"]
		r = x.airlock("commit", id)
		wantCode(t, r, 75)
		for _, args := range [][]string{
			{"commit", id, "--validate="},
			{"commit", id, "--validate", " "},
			{"land", id, "--validate="},
			{"review", id, "--validate=", "--no-browser", "--timeout", "1s"},
			{"run", "--workdir", x.base, "--validate=", "--", "touch", "broken"},
			{"open", "--workdir", x.base, "--validate", "true"},
		} {
			r = x.airlock(args...)
			wantCode(t, r, 125)
			if !strings.Contains(r.Stderr, "--validate") || !strings.Contains(r.Stderr, ".airlock.toml") {
				t.Errorf("%q: stderr does not say why --validate was refused\n%s", args, r)
			}
		}
		r = x.airlock("commit", id, "--validate", "true")
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ValidationFailed"})
		if testbin.Exists(filepath.Join(x.base, "broken")) {
			t.Fatal("broken landed although the project's validation failed")
		}
		if r := x.airlock("list", "--json"); strings.Count(r.Stdout, `"id"`) != 1 {
			t.Errorf("a refused --validate opened or settled something:\n%s", r)
		}
		// An added validator that fails refuses although the project's passes.
		if err := os.Remove(filepath.Join(x.stagedPath(id), "broken")); err != nil {
			t.Fatal(err)
		}
		build(t, x.stagedPath(id), tree{"new": F(0o644, "n\n")})
		r = x.airlock("commit", id, "--validate", "test ! -e new", "--json")
		wantCode(t, r, 75)
		if !strings.Contains(r.Stdout, `"refusal": "ValidationFailed"`) || !strings.Contains(r.Stdout, `"validators": [`) {
			t.Errorf("commit --json does not show the refusal and the validators that ran\n%s", r)
		}
		r = x.airlock("commit", id, "--validate", "test -e new", "--json")
		wantCode(t, r, 0)
		var out struct {
			Validators []string `json:"validators"`
			Receipt    struct {
				Validators []string `json:"validators"`
			} `json:"receipt"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
			t.Fatalf("commit --json: %v\n%s", err, r)
		}
		want := []string{"test ! -e broken", "test -e new"}
		if !slices.Equal(out.Validators, want) || !slices.Equal(out.Receipt.Validators, want) {
			t.Errorf("validators %q, receipt %q, want %q", out.Validators, out.Receipt.Validators, want)
		}
		if testbin.ReadFile(t, filepath.Join(x.base, "new")) != "n\n" {
			t.Error("the commit with both validators passing did not land")
		}
		if r := x.airlock("receipt", "verify", id); r.Code != 0 {
			t.Errorf("the receipt naming its validators does not verify\n%s", r)
		}
	})
}
