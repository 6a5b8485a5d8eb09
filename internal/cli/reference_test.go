package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

var updateReference = flag.Bool("update-reference", false, "rewrite docs/cli from the command tree")

// referenceDir is docs/cli, from this package's directory.
var referenceDir = filepath.Join("..", "..", "docs", "cli")

// TestCLIReference: docs/cli is the command tree's own help, one page a
// command, so a command or flag changed without regenerating the
// reference fails here. Regenerate with
//
//	go test ./internal/cli -run TestCLIReference -update-reference
func TestCLIReference(t *testing.T) {
	want := reference(newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}))
	if *updateReference {
		writeReference(t, want)
	}
	onDisk, err := filepath.Glob(filepath.Join(referenceDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range onDisk {
		if _, ok := want[filepath.Base(p)]; !ok {
			t.Errorf("%s documents no command; regenerate docs/cli (go test ./internal/cli -run TestCLIReference -update-reference)", p)
		}
	}
	for name, page := range want {
		got, err := os.ReadFile(filepath.Join(referenceDir, name))
		if err != nil || string(got) != page {
			t.Errorf("docs/cli/%s is stale; regenerate it: go test ./internal/cli -run TestCLIReference -update-reference", name)
		}
	}
}

func writeReference(t *testing.T, pages map[string]string) {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(referenceDir, "*.md"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(referenceDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, page := range pages {
		if err := os.WriteFile(filepath.Join(referenceDir, name), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// reference renders one Markdown page per command: README.md for the root,
// then the command path joined by "_" ("receipt_verify.md").
func reference(root *cobra.Command) map[string]string {
	pages := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		pages[pageName(c)] = page(c)
		for _, sub := range available(c) {
			walk(sub)
		}
	}
	walk(root)
	return pages
}

func pageName(c *cobra.Command) string {
	if !c.HasParent() {
		return "README.md"
	}
	path := strings.Fields(c.CommandPath())[1:]
	return strings.Join(path, "_") + ".md"
}

// available is what `--help` lists: no hidden or deprecated commands, no
// help command.
func available(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && sub.Name() != "help" {
			out = append(out, sub)
		}
	}
	slices.SortFunc(out, func(a, b *cobra.Command) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

func page(c *cobra.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", c.CommandPath())
	if !c.HasParent() {
		b.WriteString("The command-line reference, generated from airlock's command tree by\n`go test ./internal/cli -run TestCLIReference -update-reference`: edit the\ncommands, not these pages. Exit codes, refusals, the settle block and the\nguarantees are in [../reference.md](../reference.md); `--json` output in\n[../json.md](../json.md).\n\n")
	}
	fmt.Fprintf(&b, "%s\n\n", c.Short)
	if c.Runnable() {
		fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
	}
	if c.Long != "" {
		fmt.Fprintf(&b, "```text\n%s\n```\n\n", strings.TrimRight(c.Long, "\n"))
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "Aliases: %s\n\n", strings.Join(c.Aliases, ", "))
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "## Examples\n\n```\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
	}
	if fl := c.NonInheritedFlags(); fl.HasAvailableFlags() {
		fmt.Fprintf(&b, "## Flags\n\n```\n%s```\n\n", fl.FlagUsagesWrapped(0))
	}
	if subs := available(c); len(subs) > 0 {
		b.WriteString("## Commands\n\n")
		for _, sub := range subs {
			fmt.Fprintf(&b, "- [%s](%s): %s\n", sub.CommandPath(), pageName(sub), sub.Short)
		}
		b.WriteString("\n")
	}
	if c.HasParent() {
		parent := c.Parent()
		fmt.Fprintf(&b, "Up: [%s](%s)\n", parent.CommandPath(), pageName(parent))
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
