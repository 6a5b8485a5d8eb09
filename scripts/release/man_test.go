package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/airlockdev/airlock/internal/cli"
	"github.com/airlockdev/airlock/internal/testbin"
)

// TestManPages renders every page of a release with man -l at 80
// columns, as a user's terminal shows it: there is one page per command,
// each page's header names its own command (AIRLOCK-COMMIT(1), not
// AIRLOCK(1)), and every indented line of a command's long help (the
// tables of hook, init and completion) comes out as one line with its
// columns where --help puts them, not filled into the paragraph around it.
func TestManPages(t *testing.T) {
	manBin := testbin.Require(t, "man", "it renders the man pages as a user reads them")
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	must(t, docs([]string{"-version", "v1.2.3", dir}))

	commands := map[string]*cobra.Command{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		commands[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = c
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
	}
	walk(cli.Command())
	pages, err := filepath.Glob(filepath.Join(dir, "man", "*.1"))
	must(t, err)
	var names []string
	for _, p := range pages {
		names = append(names, filepath.Base(p))
	}
	var want []string
	for name := range commands {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("man pages %q, want one per command %q", names, want)
	}

	rows := 0
	for _, p := range pages {
		name := filepath.Base(p)
		cmd := exec.Command(manBin, "-l", p)
		// C: ASCII hyphens and quotes, whatever this machine's locale.
		cmd.Env = append(os.Environ(), "LC_ALL=C", "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("man -l %s: %v", p, err)
		}
		lines := strings.Split(string(out), "\n")
		head := strings.Fields(lines[0])
		title := strings.ToUpper(strings.TrimSuffix(name, ".1")) + "(1)"
		if len(head) < 2 || head[0] != title || head[len(head)-1] != title {
			t.Errorf("%s: man shows the header %q, want it to name %s", name, lines[0], title)
		}
		for _, l := range strings.Split(commands[name].Long, "\n") {
			if strings.TrimSpace(l) == "" || (l[0] != ' ' && l[0] != '\t') {
				continue
			}
			rows++
			// man indents a section's text by seven columns.
			row := "       " + strings.TrimRight(l, " ")
			if !slices.Contains(lines, row) {
				t.Errorf("%s: man does not show the help's line %q as one line with its columns; it shows:\n%s", name, l, out)
			}
		}
	}
	if rows == 0 {
		t.Error("no command's long help has an indented line: the table check checked nothing")
	}
}
