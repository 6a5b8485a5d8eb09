package cli

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// noJSON are the commands that print no result of their own to give as
// JSON, and why.
var noJSON = map[string]string{
	"airlock hook":       "answers in the agent's own JSON hook protocol",
	"airlock mcp":        "speaks JSON-RPC (MCP) on stdio",
	"airlock completion": "prints a shell script",
	"airlock review":     "prints the review page's URL and serves it",
	"airlock receipt":    "only holds receipt verify",
	"airlock":            "only holds the commands",
}

// TestEveryResultCommandHasJSON: each command takes --json and has its
// section in docs/json.md (a heading "airlock <command> ... --json"),
// unless noJSON says why not.
func TestEveryResultCommandHasJSON(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	var headings []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "## `airlock ") {
			headings = append(headings, strings.Trim(strings.TrimPrefix(l, "## "), "`"))
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range available(c) {
			walk(sub)
		}
		path := c.CommandPath()
		if why, ok := noJSON[path]; ok {
			if c.Flags().Lookup("json") != nil {
				t.Errorf("%s takes --json, but noJSON says it should not: %s", path, why)
			}
			return
		}
		if c.Flags().Lookup("json") == nil {
			t.Errorf("%s has no --json flag (or say why in noJSON)", path)
		}
		documented := false
		words := strings.Fields(path)
		for _, h := range headings {
			hw := strings.Fields(h)
			if len(hw) > len(words) && slices.Equal(hw[:len(words)], words) && slices.Contains(hw, "--json") {
				documented = true
			}
		}
		if !documented {
			t.Errorf("docs/json.md has no section `%s ... --json`", path)
		}
	}
	walk(newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}))
}
