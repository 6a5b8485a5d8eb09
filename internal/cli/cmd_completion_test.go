package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock"

	"github.com/airlockdev/airlock/internal/testbin"
)

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestCompletionScripts(t *testing.T) {
	tests := []struct {
		shell string
		check []string // a syntax check that reads the script on stdin
	}{
		{"bash", []string{"bash", "-n"}},
		{"zsh", []string{"zsh", "-n"}},
		{"fish", []string{"fish", "--no-execute"}},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			code, out, errs := runMain(t, "completion", tt.shell)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if len(out) < 100 || !strings.Contains(out, "airlock") {
				t.Fatalf("script is empty or does not mention airlock:\n%s", out)
			}
			sh := testbin.Require(t, tt.check[0], "it parses the generated script")
			cmd := exec.Command(sh, tt.check[1:]...)
			cmd.Stdin = strings.NewReader(out)
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s does not parse the script: %v\n%s", strings.Join(tt.check, " "), err, msg)
			}
		})
	}
}

func TestCompletionRefusesOtherShells(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "powershell"}, {"completion", "bash", "zsh"}} {
		code, out, errs := runMain(t, args...)
		if code != 125 || out != "" || !strings.Contains(errs, "airlock:") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 125 and a message", args, code, out, errs)
		}
	}
}

// TestCompletionTxIDs: commands that take an id complete them, through
// cobra's __complete protocol that the scripts call.
func TestCompletionTxIDs(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	t.Setenv("AIRLOCK_STATE_DIR", stateDir)
	base := filepath.Join(dir, "base")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := airlock.OpenStore(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := st.Open(ctx, airlock.OpenOptions{Base: base, ID: "open-one"}); err != nil {
		t.Fatal(err)
	}
	done, err := st.Open(ctx, airlock.OpenOptions{Base: base, ID: "done-one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := done.Discard(ctx, airlock.SettleOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args      []string
		want, not []string
	}{
		{[]string{"commit", ""}, []string{"open-one\topen "}, []string{"done-one"}},
		{[]string{"discard", ""}, []string{"open-one"}, []string{"done-one"}},
		{[]string{"show", ""}, []string{"open-one", "done-one\tdiscarded "}, nil},
		{[]string{"diff", ""}, []string{"open-one", "done-one"}, nil},
		{[]string{"land", "open-one", ""}, []string{"open-one"}, []string{"done-one"}},
		{[]string{"commit", "open-one", ""}, nil, []string{"open-one", "done-one"}},
	}
	for _, tt := range tests {
		code, out, errs := runMain(t, append([]string{"__complete"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("__complete %q: exit %d: %s", tt.args, code, errs)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("__complete %q does not offer %q:\n%s", tt.args, w, out)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(out, n) {
				t.Errorf("__complete %q offers %q:\n%s", tt.args, n, out)
			}
		}
	}
}
