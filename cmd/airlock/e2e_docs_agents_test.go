package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The agents' pages (docs/agents/*.md) are exercised as written: every
// `airlock run -- AGENT …` line runs with a stand-in for the agent on
// PATH, every MCP configuration (`claude mcp add`, the JSON and TOML
// forms) starts the server the way the agent would and drives it through a
// commit, and the hooks JSON each page shows is what `airlock init` writes.

type snippet struct {
	file, lang, text string
}

// agentDocs is where the agents' pages live, from this package's directory.
var agentDocs = filepath.Join("..", "..", "docs", "agents")

// agentSnippets returns the fenced code blocks of the agents' pages.
func agentSnippets(t *testing.T) []snippet {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(agentDocs, "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no agent pages in %s: %v", agentDocs, err)
	}
	var out []snippet
	for _, p := range pages {
		for _, b := range fencedBlocks(t, p) {
			out = append(out, snippet{filepath.Base(p), b.lang, b.text})
		}
	}
	return out
}

// stubAgent is a stand-in for an agent CLI: it records its arguments and
// the directory it runs in, and edits a file, as the agent would.
const stubAgent = `#!/bin/sh
name=$(basename "$0")
{ printf '%s\n' "$@"; } > "by-$name.args"
pwd -P > "by-$name.cwd"
printf 'edited by %s\n' "$name" >> main.txt
`

func TestE2EDocsAgentRunLines(t *testing.T) {
	var lines []string
	for _, s := range agentSnippets(t) {
		for _, l := range strings.Split(s.text, "\n") {
			if strings.HasPrefix(l, "airlock run -- ") {
				lines = append(lines, l)
			}
		}
	}
	// The agents the pages promise a line for.
	var agents []string
	for _, l := range lines {
		agents = append(agents, strings.Fields(strings.TrimPrefix(l, "airlock run -- "))[0])
	}
	for _, want := range []string{"codex", "aider", "agent", "gemini", "opencode"} {
		if !slices.Contains(agents, want) {
			t.Errorf("docs/agents has no `airlock run -- %s …` line", want)
		}
	}
	bin := filepath.Dir(airlockBin)
	stubs := t.TempDir()
	for _, a := range agents {
		if err := os.WriteFile(filepath.Join(stubs, a), []byte(stubAgent), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, line := range lines {
		agent := agents[i]
		t.Run(agent, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"main.txt": F(0o644, "main\n")})
			r := testbin.Run(t, testbin.Cmd{Bin: "sh", Args: []string{"-c", line}, Dir: x.base,
				Env: x.environ("PATH=" + stubs + ":" + bin + ":" + os.Getenv("PATH")), Timeout: commandTimeout})
			if r.Code != 0 {
				t.Fatalf("%s: %v", line, r)
			}
			if !strings.Contains(r.Stdout+r.Stderr, "airlock.outcome=committed") {
				t.Errorf("%s did not commit:\n%s", line, r)
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "main.txt")); got != "main\nedited by "+agent+"\n" {
				t.Errorf("the agent's edit did not land: main.txt = %q", got)
			}
			// The stand-in got the page's flags (those before the quoted
			// prompt), each as an argument of its own.
			unquoted, _, _ := strings.Cut(strings.TrimPrefix(line, "airlock run -- "+agent+" "), `"`)
			args := strings.Fields(unquoted)
			got := testbin.ReadFile(t, filepath.Join(x.base, "by-"+agent+".args"))
			for _, a := range args {
				if strings.HasPrefix(a, "-") && !strings.Contains(got, a+"\n") {
					t.Errorf("the agent did not get %s; it got:\n%s", a, got)
				}
			}
			// Same path: the agent ran at the project's own path, where its
			// trust and history are filed (Linux with namespaces).
			if !strings.Contains(r.Stdout+r.Stderr, "same-path mode unavailable") {
				if cwd := strings.TrimSpace(testbin.ReadFile(t, filepath.Join(x.base, "by-"+agent+".cwd"))); cwd != x.base {
					t.Errorf("the agent ran in %s, not at the project's path %s", cwd, x.base)
				}
			}
		})
	}
}

// mcpLaunch is how an agent starts a stdio MCP server: a command and its
// arguments, from one of the agents' pages.
type mcpLaunch struct {
	from string
	argv []string
}

func TestE2EDocsMCPConfigs(t *testing.T) {
	var launches []mcpLaunch
	for _, s := range agentSnippets(t) {
		switch s.lang {
		case "sh":
			for _, l := range strings.Split(s.text, "\n") {
				if rest, ok := strings.CutPrefix(l, "claude mcp add airlock -- "); ok {
					launches = append(launches, mcpLaunch{"claude mcp add", strings.Fields(rest)})
				}
			}
		case "json":
			var c struct {
				MCPServers map[string]struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
				MCP map[string]struct {
					Type    string   `json:"type"`
					Command []string `json:"command"`
					Enabled bool     `json:"enabled"`
				} `json:"mcp"`
			}
			if err := json.Unmarshal([]byte(s.text), &c); err != nil {
				t.Fatalf("docs/agents/%s: a JSON snippet does not parse: %v\n%s", s.file, err, s.text)
			}
			if a, ok := c.MCPServers["airlock"]; ok {
				launches = append(launches, mcpLaunch{"mcpServers JSON", append([]string{a.Command}, a.Args...)})
			}
			if a, ok := c.MCP["airlock"]; ok {
				if a.Type != "local" || !a.Enabled {
					t.Errorf("opencode snippet: type %q enabled %v", a.Type, a.Enabled)
				}
				launches = append(launches, mcpLaunch{"opencode JSON", a.Command})
			}
		case "toml":
			var c struct {
				Servers map[string]struct {
					Command string   `toml:"command"`
					Args    []string `toml:"args"`
				} `toml:"mcp_servers"`
			}
			if _, err := toml.Decode(s.text, &c); err != nil {
				t.Fatalf("docs/agents/%s: a TOML snippet does not parse: %v\n%s", s.file, err, s.text)
			}
			if a, ok := c.Servers["airlock"]; ok {
				launches = append(launches, mcpLaunch{"Codex TOML", append([]string{a.Command}, a.Args...)})
			}
		}
	}
	var froms []string
	for _, l := range launches {
		froms = append(froms, l.from)
	}
	for _, want := range []string{"claude mcp add", "mcpServers JSON", "opencode JSON", "Codex TOML"} {
		if !slices.Contains(froms, want) {
			t.Errorf("docs/agents has no %s configuration for airlock mcp", want)
		}
	}
	path := filepath.Dir(airlockBin) + ":" + os.Getenv("PATH")
	for _, l := range launches {
		t.Run(l.from, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"main.txt": F(0o644, "main\n")})
			ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
			defer cancel()
			env := x.environ("PATH=" + path)
			// Resolve the command as the agent would, through PATH.
			exe := l.argv[0]
			if !strings.Contains(exe, "/") {
				var err error
				if exe, err = lookPath(exe, path); err != nil {
					t.Fatal(err)
				}
			}
			cmd := testbin.Cmd{Bin: exe, Args: l.argv[1:], Dir: x.base, Env: env}.Command(ctx)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "docs", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("start %q: %v", l.argv, err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 9 { // server.go's seven, checkpoint.go's two
				t.Fatalf("tools: %v %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "open", Arguments: map[string]any{"path": "."}})
			if err != nil || res.IsError {
				t.Fatalf("open: %v %+v", err, res)
			}
			o := res.StructuredContent.(map[string]any)
			writeFile(t, filepath.Join(o["path"].(string), "main.txt"), "main\nvia mcp\n")
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "commit", Arguments: map[string]any{"id": o["id"]}})
			if err != nil || res.IsError || res.StructuredContent.(map[string]any)["outcome"] != "committed" {
				t.Fatalf("commit: %v %+v", err, res)
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "main.txt")); got != "main\nvia mcp\n" {
				t.Errorf("main.txt = %q after the MCP commit", got)
			}
		})
	}
}

func lookPath(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// TestE2EDocsCodexFlags: every `codex exec` line of the agents' pages
// uses flags the installed Codex has. Codex removes flags
// (`--full-auto` went in 0.147, and the documented line then failed with
// "unexpected argument"), so the line is checked against the real
// `codex exec --help`, not a stand-in.
func TestE2EDocsCodexFlags(t *testing.T) {
	var lines []string
	for _, s := range agentSnippets(t) {
		for _, l := range strings.Split(s.text, "\n") {
			if _, rest, ok := strings.Cut(l, "codex exec "); ok && strings.HasPrefix(l, "airlock run -- ") {
				lines = append(lines, rest)
			}
		}
	}
	if len(lines) == 0 {
		t.Fatal("docs/agents has no `airlock run -- codex exec …` line")
	}
	codex := testbin.Require(t, "codex", "the documented `codex exec` lines are checked against its --help")
	help := testbin.Run(t, testbin.Cmd{Bin: codex, Args: []string{"exec", "--help"}, Env: testbin.Environ(t.TempDir(), t.TempDir()), Timeout: commandTimeout})
	if help.Code != 0 {
		t.Fatalf("codex exec --help: %v", help)
	}
	for _, rest := range lines {
		flags, _, _ := strings.Cut(rest, `"`) // the prompt is quoted
		args := strings.Fields(flags)
		for i, a := range args {
			if !strings.HasPrefix(a, "-") {
				continue
			}
			name, _, _ := strings.Cut(a, "=")
			if !regexp.MustCompile(`(?m)(^|[\s,])` + regexp.QuoteMeta(name) + `([\s,=<]|$)`).MatchString(help.Stdout) {
				t.Errorf("`codex exec %s`: the installed Codex has no %s\n%s", rest, name, help.Stdout)
				continue
			}
			// A value the help lists possible values for must be one.
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && strings.Contains(help.Stdout, "[possible values:") {
				if m := regexp.MustCompile(regexp.QuoteMeta(name) + ` <[A-Z_]+>\s*\n(?:.*\n)*?\s*\[possible values: ([^\]]*)\]`).FindStringSubmatch(help.Stdout); m != nil {
					if !slices.Contains(strings.Split(m[1], ", "), args[i+1]) {
						t.Errorf("`codex exec %s`: %s %s is not one of %s", rest, name, args[i+1], m[1])
					}
				}
			}
		}
	}
}

// TestE2EDocsHooksAreWhatInitWrites: the hooks JSON of each agent's page
// (docs/agents/claude.md, codex.md) is what `airlock init AGENT` writes
// into a project that has none, hook for hook.
func TestE2EDocsHooksAreWhatInitWrites(t *testing.T) {
	settings := map[string]string{"claude": ".claude/settings.json", "codex": ".codex/hooks.json"}
	for agent, file := range settings {
		t.Run(agent, func(t *testing.T) {
			var shown []any
			for _, s := range agentSnippets(t) {
				if s.file != agent+".md" || s.lang != "json" || !strings.Contains(s.text, `"hooks"`) {
					continue
				}
				var v any
				if err := json.Unmarshal([]byte(s.text), &v); err != nil {
					t.Fatalf("docs/agents/%s: the hooks JSON does not parse: %v\n%s", s.file, err, s.text)
				}
				shown = append(shown, v)
			}
			if len(shown) != 1 {
				t.Fatalf("docs/agents/%s.md shows %d hooks JSON blocks, want 1", agent, len(shown))
			}
			x := newH(t)
			build(t, x.base, tree{"main.txt": F(0o644, "main\n")})
			if r := x.exec(run{dir: x.base, args: []string{"init", agent}}); r.Code != 0 {
				t.Fatalf("airlock init %s: %v", agent, r)
			}
			var written any
			if err := json.Unmarshal([]byte(testbin.ReadFile(t, filepath.Join(x.base, file))), &written); err != nil {
				t.Fatalf("%s after airlock init %s: %v", file, agent, err)
			}
			if !reflect.DeepEqual(shown[0], written) {
				w, _ := json.MarshalIndent(written, "", "  ")
				t.Errorf("docs/agents/%s.md shows hooks that airlock init %s does not write; it writes:\n%s", agent, agent, w)
			}
		})
	}
}
