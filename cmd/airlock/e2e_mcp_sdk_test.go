package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// mcpSDKVersion is the official MCP TypeScript SDK the contract is checked
// against; .ci/run installs this version.
const mcpSDKVersion = "1.32.2"

// mcpSDKModules is the node_modules directory holding the TypeScript SDK
// at mcpSDKVersion: .ci/run's npm prefix, or npm's global root. Missing,
// the test skips naming it, and fails under CI=true.
func mcpSDKModules(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	dirs := []string{filepath.Join(cache, "airlock-ci", "npm", "lib", "node_modules")}
	if out, err := exec.Command("npm", "root", "-g").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	var found []string
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "@modelcontextprotocol", "sdk", "package.json"))
		if err != nil {
			continue
		}
		var pkg struct{ Version string }
		if json.Unmarshal(b, &pkg) == nil && pkg.Version == mcpSDKVersion {
			return dir
		}
		found = append(found, dir+": "+pkg.Version)
	}
	testbin.Missing(t, "@modelcontextprotocol/sdk@%s is not installed in %s (found %q; .ci/run installs it: npm install -g --prefix %s @modelcontextprotocol/sdk@%s)",
		mcpSDKVersion, strings.Join(dirs, " or "), found, filepath.Join(cache, "airlock-ci", "npm"), mcpSDKVersion)
	return ""
}

// TestE2EMCPTypeScriptSDK: the official MCP TypeScript SDK's client, the
// one most MCP clients are built on, drives `airlock mcp` as an MCP-only
// agent would (testdata/mcpsdk/client.cjs): it lists seven tools, each
// with an output schema, and every structured result it gets matches its
// tool's schema (the SDK checks and throws otherwise); open gives a staged
// tree, run builds in it at the project's path and reports a failing
// command as a result, diff's patch is the text content, commit lands it
// with the lean result, and status returns the receipt that result names.
func TestE2EMCPTypeScriptSDK(t *testing.T) {
	node := testbin.Require(t, "node", "the MCP TypeScript SDK's client runs in it")
	modules := mcpSDKModules(t)
	x := newH(t)
	build(t, x.base, tree{"main.txt": F(0o644, "main\n")})
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("testdata", "mcpsdk", "client.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := testbin.Cmd{Bin: node, Args: []string{script, airlockBin, x.base}, Dir: x.base, Env: x.environ("NODE_PATH=" + modules)}.Command(ctx)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK's client: %v\n%s", err, stderr.String())
	}
	var got struct {
		Tools               []string
		WithoutOutputSchema []string
		Open                struct{ ID, Path, Base string }
		Run, RunFailed      struct {
			Result struct {
				ExitCode int    `json:"exit_code"`
				SamePath bool   `json:"same_path"`
				Dir      string `json:"dir"`
				Fallback string `json:"fallback"`
			}
			Text string
		}
		Diff struct {
			Result struct{ Format string }
			Text   string
		}
		Commit struct {
			Outcome       string
			Added         int
			Modified      int
			ReceiptPath   string         `json:"receipt_path"`
			ReceiptDigest string         `json:"receipt_digest"`
			Receipt       map[string]any `json:"receipt"`
		}
		Status struct{ Status, Receipt, ReceiptDigest string }
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the client's report %q: %v", out, err)
	}
	if want := []string{"checkpoint", "commit", "diff", "discard", "list", "open", "rewind", "run", "status"}; !slices.Equal(got.Tools, want) || len(got.WithoutOutputSchema) != 0 {
		t.Errorf("tools %q (without an output schema: %q), want %q, each with one", got.Tools, got.WithoutOutputSchema, want)
	}
	if got.Open.Base != x.base || got.Open.Path == "" {
		t.Errorf("open: %+v", got.Open)
	}
	root := got.Open.Path
	if got.Run.Result.SamePath {
		root = x.base
	} else if got.Run.Result.Fallback == "" {
		t.Error("run: not at the project's path, and no fallback says why")
	}
	if r := got.Run; r.Result.ExitCode != 0 || r.Result.Dir != root || r.Text != "exit 0\nstdout:\nbuilt\n"+root+"\n" {
		t.Errorf("run: %+v", r)
	}
	if r := got.RunFailed; r.Result.ExitCode != 2 || r.Text != "exit 2\nstderr:\nFAIL\n" {
		t.Errorf("a failing run: %+v", r)
	}
	if d := got.Diff; d.Result.Format != "patch" || !strings.Contains(d.Text, "+++ b/built.txt\n@@ -0,0 +1 @@\n+main, edited\n") {
		t.Errorf("diff: %+v", d)
	}
	if c := got.Commit; c.Outcome != "committed" || c.Added != 1 || c.Modified != 1 || c.Receipt != nil || c.ReceiptPath == "" || !strings.HasPrefix(c.ReceiptDigest, "sha256:") {
		t.Errorf("commit: %+v", c)
	}
	if s := got.Status; s.Status != "committed" || s.Receipt != got.Commit.ReceiptPath || s.ReceiptDigest != got.Commit.ReceiptDigest {
		t.Errorf("status: %+v, want committed with the receipt the commit named", s)
	}
	for file, want := range map[string]string{"main.txt": "main, edited\n", "built.txt": "main, edited\n"} {
		if got := testbin.ReadFile(t, filepath.Join(x.base, file)); got != want {
			t.Errorf("the base's %s = %q, want %q", file, got, want)
		}
	}
}
