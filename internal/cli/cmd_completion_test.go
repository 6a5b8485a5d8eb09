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
	if _, err := done.Discard(ctx, airlock.DiscardOptions{}); err != nil {
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

// TestCompletionBackend: --backend completes its values, with what each
// is, for both commands that take it.
func TestCompletionBackend(t *testing.T) {
	all := []string{"auto", "copy", "reflink", "overlay", "worktree"}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"open", "--backend", ""}, all},
		{[]string{"run", "--backend", ""}, all},
		{[]string{"open", "--backend=re"}, []string{"reflink"}},
		{[]string{"open", "--backend", "o"}, []string{"overlay"}},
		{[]string{"open", "--backend", "zfs"}, nil},
	}
	for _, tt := range tests {
		code, out, errs := runMain(t, append([]string{"__complete"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("__complete %q: exit %d: %s", tt.args, code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) == 0 || lines[len(lines)-1] != ":4" {
			t.Errorf("__complete %q: want the directive :4 (no file completion) last:\n%s", tt.args, out)
			continue
		}
		var got []string
		for _, l := range lines[:len(lines)-1] {
			name, desc, _ := strings.Cut(l, "\t")
			if strings.HasPrefix(name, "--backend=") {
				name = strings.TrimPrefix(name, "--backend=")
			}
			if desc == "" {
				t.Errorf("__complete %q: %q has no description", tt.args, name)
			}
			got = append(got, name)
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("__complete %q offers %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestUsageErrorsNameTheirHelp: a mistyped flag or command says which
// help to read, by the command's full path.
func TestUsageErrorsNameTheirHelp(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "unknown flag: --bogus (see `airlock --help`)"},
		{[]string{"open", "--bogus"}, "unknown flag: --bogus (see `airlock open --help`)"},
		{[]string{"receipt", "verify", "--bogus"}, "unknown flag: --bogus (see `airlock receipt verify --help`)"},
		{[]string{"frob"}, `unknown command "frob" for "airlock" (see ` + "`airlock --help`)"},
		{[]string{"comit", "x"}, `unknown command "comit" for "airlock"; did you mean "commit"? (see ` + "`airlock --help`)"},
		{[]string{"receipt", "frob"}, `unknown command "frob" for "airlock receipt" (see ` + "`airlock receipt --help`)"},
	}
	for _, tt := range tests {
		code, out, errs := runMain(t, tt.args...)
		if code != 125 || out != "" || errs != "airlock: "+tt.want+"\n" {
			t.Errorf("airlock %q: exit %d, stdout %q, stderr %q\nwant exit 125 and stderr %q", tt.args, code, out, errs, "airlock: "+tt.want+"\n")
		}
	}
	// Alone, a command that only holds others shows their list.
	for _, args := range [][]string{nil, {"receipt"}} {
		code, out, errs := runMain(t, args...)
		if code != 0 || !strings.Contains(out, "Available Commands:") || errs != "" {
			t.Errorf("airlock %q: exit %d, stdout %q, stderr %q; want its help", args, code, out, errs)
		}
	}
}
