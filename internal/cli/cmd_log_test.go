package cli

import (
	"strings"
	"testing"
)

// TestCommandLine: a receipt's command as a log line shows it, quoted
// for a shell, with nothing that can move a terminal, and cut.
func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{nil, "(airlock open)"},
		{[]string{"make", "generate"}, "make generate"},
		{[]string{"sh", "-c", "echo it's > a, b"}, `sh -c 'echo it'\''s > a, b'`},
		{[]string{"printf", "\x1b[2J\x07"}, "printf '%1B[2J%07'"},
		{[]string{"echo", "100%", "\xff"}, "echo 100%25 %FF"},
		{[]string{"echo", "\u009b31m"}, "echo %C2%9B31m"},
		{[]string{""}, "''"},
		{[]string{"claude", "-p", strings.Repeat("fix it ", 20)}, "claude -p 'fix it fix it fix it fix it fix it fix it fix it…"},
	} {
		got := commandLine(c.argv)
		if got != c.want {
			t.Errorf("commandLine(%q) = %q, want %q", c.argv, got, c.want)
		}
		if n := len([]rune(got)); n > maxCommandLine {
			t.Errorf("commandLine(%q) is %d characters, more than %d", c.argv, n, maxCommandLine)
		}
	}
}
