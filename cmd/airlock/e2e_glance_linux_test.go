package main_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EGlanceStatusLinesErased: on a terminal, run says what it is
// doing ("staging", "committing") on a line that overwrites itself, and
// erases it before anything stays: the command's own output, the glance,
// or an error. The bytes the terminal received hold the status lines;
// the screen a person sees afterwards holds none of them.
func TestE2EGlanceStatusLinesErased(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		drawn    []string // in the raw bytes
		want     string   // the screen, exactly; "" to check prefix alone
		prefix   string
		exitCode int
	}{
		{
			name:  "committed",
			args:  []string{"run", "--id", "s1", "--", "sh", "-c", "echo said by the command; echo x > x.txt"},
			drawn: []string{"\r\x1b[Kairlock: staging the current directory", "\r\x1b[Kairlock: committing"},
			want:  "said by the command\nairlock: committed s1\nairlock: +1 ~0 -0\n",
		},
		{
			name:     "an error while staging",
			args:     []string{"run", "--workdir", "no-such-dir", "--", "true"},
			drawn:    []string{"\r\x1b[Kairlock: staging no-such-dir"},
			prefix:   "airlock: ",
			exitCode: 125,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := newH(t)
			testbin.WriteFiles(t, x.base, map[string]string{"a": "a\n"})
			ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, airlockBin, tt.args...)
			cmd.Dir, cmd.Env = x.base, x.environ()
			raw, err := onTerminal(cmd)
			if code := cmd.ProcessState.ExitCode(); code != tt.exitCode {
				t.Fatalf("exit %d (%v), want %d; the terminal got %q", code, err, tt.exitCode, raw)
			}
			for _, d := range tt.drawn {
				if !strings.Contains(raw, d) {
					t.Errorf("the terminal never showed %q: %q", d, raw)
				}
			}
			seen, err := screen(raw)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want != "" && seen != tt.want:
				t.Errorf("the screen:\n%s\nwant:\n%s\nraw: %q", seen, tt.want, raw)
			case tt.prefix != "" && (!strings.HasPrefix(seen, tt.prefix) || strings.Count(seen, "\n") != 1 || strings.Contains(seen, "airlock: staging")):
				t.Errorf("the screen is not the one error line, on a line of its own:\n%s\nraw: %q", seen, raw)
			}
			if tt.exitCode != 0 && !strings.Contains(seen, filepath.Join(x.base, "no-such-dir")) {
				t.Errorf("the error does not name the directory: %s", seen)
			}
		})
	}
}
