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

// TestEveryCommandHasExamples: each command's help shows examples, and
// every airlock command line in them names a real command and only flags
// it has.
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	for path := range examples {
		if c, rest, err := root.Find(strings.Fields(path)); err != nil || len(rest) > 0 || (path != "" && c == root) {
			t.Errorf("examples[%q] names no command", path)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		subs := available(c)
		for _, sub := range subs {
			walk(sub)
		}
		if !c.HasExample() {
			t.Errorf("%s has no examples", c.CommandPath())
		}
		for _, line := range strings.Split(c.Example, "\n") {
			words := shellWords(line)
			if len(words) == 0 || words[0] != "airlock" {
				continue
			}
			fresh := newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
			fresh.InitDefaultVersionFlag()
			cmd, rest, err := fresh.Find(words[1:])
			if err == nil {
				cmd.InitDefaultHelpFlag()
				err = cmd.ParseFlags(rest)
			}
			if err != nil {
				t.Errorf("%s's example %q: %v", c.CommandPath(), strings.TrimSpace(line), err)
			}
		}
	}
	walk(root)
}

// shellWords splits an example line as sh would, as far as the examples
// need: quotes, and the end of the command at a comment, pipe, && or ;.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case !inWord && (r == '#' || r == '|' || r == '&' || r == ';'):
			return words
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestHelpEndsWithExamples: every command's --help ends with its
// examples, as the README says.
func TestHelpEndsWithExamples(t *testing.T) {
	root := newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range available(c) {
			walk(sub)
		}
		var out strings.Builder
		c.SetOut(&out)
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		help := strings.TrimRight(out.String(), "\n")
		if !strings.HasSuffix(help, "Examples:\n"+strings.TrimRight(c.Example, "\n")) {
			t.Errorf("%s --help does not end with its examples:\n%s", c.CommandPath(), help)
		}
	}
	walk(root)
}
