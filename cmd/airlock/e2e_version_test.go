package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EVersion: `airlock --version`, `airlock version` and its --json
// say the same, and so does the MCP server's implementation version, both
// for the tests' own binary and for one stamped as scripts/release.sh
// stamps a release.
func TestE2EVersion(t *testing.T) {
	const (
		pkg    = "github.com/airlockdev/airlock/internal/buildinfo"
		commit = "0123456789abcdef0123456789abcdef01234567"
	)
	stamped := testbin.BuildRelease(t, "-ldflags", "-X "+pkg+".version=v9.8.7-test -X "+pkg+".commit="+commit+" -X "+pkg+".commitTime=2026-03-01T12:00:00+01:00")
	platform := runtime.GOOS + "/" + runtime.GOARCH

	check := func(t *testing.T, bin string) map[string]any {
		x := newH(t)
		flag := x.exec(run{bin: bin, args: []string{"--version"}})
		wantCode(t, flag, 0)
		cmd := x.exec(run{bin: bin, args: []string{"version"}})
		wantCode(t, cmd, 0)
		if flag.Stdout != cmd.Stdout || strings.Count(flag.Stdout, "\n") != 1 {
			t.Errorf("--version printed %q, version printed %q: want the same one line", flag.Stdout, cmd.Stdout)
		}
		r := x.exec(run{bin: bin, args: []string{"version", "--json"}})
		wantCode(t, r, 0)
		var v map[string]any
		must(t, json.Unmarshal([]byte(r.Stdout), &v))
		if v["go"] != runtime.Version() || v["platform"] != platform {
			t.Errorf("version --json: go %v, platform %v; the tests were built by %s for %s", v["go"], v["platform"], runtime.Version(), platform)
		}
		if s, _ := v["version"].(string); s == "" || !strings.HasPrefix(cmd.Stdout, "airlock "+s+" (") {
			t.Errorf("version --json says version %v, version says %q", v["version"], cmd.Stdout)
		}
		if got := mcpVersion(t, x, bin); got != v["version"] {
			t.Errorf("the MCP server says it is version %q, airlock version --json %q", got, v["version"])
		}
		return v
	}

	t.Run("tests' binary", func(t *testing.T) { check(t, airlockBin) })
	t.Run("stamped", func(t *testing.T) {
		v := check(t, stamped)
		want := map[string]any{"version": "v9.8.7-test", "commit": commit, "commit_time": "2026-03-01T11:00:00Z", "dirty": false}
		for k, w := range want {
			if v[k] != w {
				t.Errorf("version --json: %s = %v, want %v", k, v[k], w)
			}
		}
		// What only a stamped build prints is documented too.
		raw, _ := json.Marshal(v)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var doc any
		must(t, dec.Decode(&doc))
		for _, e := range readJSONDoc(t).object("version --json", doc, "airlock version --json") {
			t.Error(e)
		}
		x := newH(t)
		r := x.exec(run{bin: stamped, args: []string{"--version"}})
		if want := "airlock v9.8.7-test (commit 0123456789ab; " + runtime.Version() + " " + platform + ")\n"; r.Stdout != want {
			t.Errorf("--version printed %q, want %q", r.Stdout, want)
		}
	})
}

// mcpVersion is the version `bin mcp` reports when a client connects.
func mcpVersion(t *testing.T, x *h, bin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := testbin.Cmd{Bin: bin, Args: []string{"mcp"}, Dir: x.base, Env: x.environ()}.Command(ctx)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %s mcp: %v", bin, err)
	}
	defer cs.Close()
	return cs.InitializeResult().ServerInfo.Version
}
