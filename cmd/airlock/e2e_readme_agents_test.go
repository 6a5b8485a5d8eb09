package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The README's "Agents" section is exercised as written: every
// `airlock run -- AGENT …` line runs with a stand-in for the agent on
// PATH, and every MCP configuration (`claude mcp add`, the JSON and TOML
// forms) starts the server the way the agent would and drives it through a
// commit.

type snippet struct {
	lang, text string
}

// agentSnippets returns the fenced code blocks of the README's Agents
// section.
func agentSnippets(t *testing.T) []snippet {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Agents\n")
	if !ok {
		t.Fatal("README.md has no \"## Agents\" section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var out []snippet
	for _, m := range regexp.MustCompile("(?ms)^```(\\w*)\\n(.*?)^```").FindAllStringSubmatch(sec, -1) {
		out = append(out, snippet{m[1], m[2]})
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

func TestE2EReadmeAgentRunLines(t *testing.T) {
	var lines []string
	for _, s := range agentSnippets(t) {
		for _, l := range strings.Split(s.text, "\n") {
			if strings.HasPrefix(l, "airlock run -- ") {
				lines = append(lines, l)
			}
		}
	}
	// The agents the README promises a line for.
	var agents []string
	for _, l := range lines {
		agents = append(agents, strings.Fields(strings.TrimPrefix(l, "airlock run -- "))[0])
	}
	for _, want := range []string{"codex", "aider", "agent", "gemini", "opencode"} {
		if !slices.Contains(agents, want) {
			t.Errorf("the Agents section has no `airlock run -- %s …` line", want)
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
			// The stand-in got the README's flags (those before the quoted
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
// arguments, from one of the README's configurations.
type mcpLaunch struct {
	from string
	argv []string
}

func TestE2EReadmeMCPConfigs(t *testing.T) {
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
				t.Fatalf("README JSON snippet does not parse: %v\n%s", err, s.text)
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
				t.Fatalf("README TOML snippet does not parse: %v\n%s", err, s.text)
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
			t.Errorf("the Agents section has no %s configuration for airlock mcp", want)
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
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("start %q: %v", l.argv, err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 6 {
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

// TestE2EReadmeCodexFlags: every `codex exec` line of the README's Agents
// section uses flags the installed Codex has. Codex removes flags
// (`--full-auto` went in 0.147, and the README's line then failed with
// "unexpected argument"), so the line is checked against the real
// `codex exec --help`, not a stand-in.
func TestE2EReadmeCodexFlags(t *testing.T) {
	var lines []string
	for _, s := range agentSnippets(t) {
		for _, l := range strings.Split(s.text, "\n") {
			if _, rest, ok := strings.Cut(l, "codex exec "); ok && strings.HasPrefix(l, "airlock run -- ") {
				lines = append(lines, rest)
			}
		}
	}
	if len(lines) == 0 {
		t.Fatal("the Agents section has no `airlock run -- codex exec …` line")
	}
	codex := testbin.Require(t, "codex", "the README's `codex exec` lines are checked against its --help")
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
