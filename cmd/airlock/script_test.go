package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestScript runs the scripts in testdata/script, as cmd/go runs its own:
// each is a user's session at a shell — files to start from, the airlock
// commands they type, the exit codes and the output lines they see — so
// that what the docs promise of every command, flag, exit code and
// output line is pinned where it reads like the docs themselves. Races,
// crashes and fault points, which a script cannot say, stay in Go tests.
//
// Beyond testscript's own commands, a script has:
//
//	airlock [exit=N] [tty=FILE] ARGS...
//	                           run the airlock under test (on PATH first);
//	                           it must exit N (default 0). With tty=FILE
//	                           its stdout and stderr are a terminal (a
//	                           pseudo-terminal), and FILE gets what a
//	                           person sees on it once drawn (lines that
//	                           overwrote themselves and were erased leave
//	                           nothing), to cmp or grep
//
// and the conditions [root], [git] and [overlay] (overlayfs mounts here,
// as `airlock doctor` finds). Every script gets a fresh $HOME
// ($WORK/home), its own state root ($AIRLOCK_STATE_DIR, $WORK/state),
// git's identity without any system or global git config, and nothing of
// the caller's environment beyond PATH.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, "home")
			if err := os.MkdirAll(home, 0o700); err != nil {
				return err
			}
			env.Setenv("HOME", home)
			env.Setenv("AIRLOCK_STATE_DIR", filepath.Join(env.WorkDir, "state"))
			env.Setenv("PATH", filepath.Dir(airlockBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			for _, kv := range testbin.GitIdentity {
				k, v, _ := strings.Cut(kv, "=")
				env.Setenv(k, v)
			}
			return nil
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"airlock": scriptAirlock,
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			case "git":
				_, err := exec.LookPath("git")
				if err != nil && testbin.InCI() {
					// CI installs git: a script must not skip its git half there.
					return false, fmt.Errorf("git is not installed, and CI=true: %w", err)
				}
				return err == nil, nil
			case "overlay":
				return overlayWorks()
			}
			return false, errors.New("unknown condition " + cond)
		},
	})
}

// scriptAirlock is the script command `airlock [exit=N] ARGS...`.
func scriptAirlock(ts *testscript.TestScript, neg bool, args []string) {
	want := 0
	if len(args) > 0 {
		if v, ok := strings.CutPrefix(args[0], "exit="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				ts.Fatalf("airlock %s: want exit=N with N a number", args[0])
			}
			if neg {
				ts.Fatalf("airlock: give ! or exit=N, not both")
			}
			want, args = n, args[1:]
		}
	}
	var err error
	if len(args) > 0 && strings.HasPrefix(args[0], "tty=") {
		err = scriptOnTerminal(ts, ts.MkAbs(strings.TrimPrefix(args[0], "tty=")), args[1:])
	} else {
		err = ts.Exec("airlock", args...)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("airlock %s: %v", strings.Join(args, " "), err)
	}
	switch {
	case neg && code == 0:
		ts.Fatalf("airlock %s: exit 0, want a failure", strings.Join(args, " "))
	case !neg && code != want:
		ts.Fatalf("airlock %s: exit %d, want %d", strings.Join(args, " "), code, want)
	}
}

// scriptOnTerminal runs airlock ARGS with its stdout and stderr on a
// pseudo-terminal, in the script's directory and environment, and writes
// the terminal's screen to file.
func scriptOnTerminal(ts *testscript.TestScript, file string, args []string) error {
	cmd := exec.Command(airlockBin, args...)
	cmd.Dir = ts.MkAbs(".")
	for _, k := range []string{"HOME", "AIRLOCK_STATE_DIR", "PATH", "TMPDIR", "WORK"} {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	cmd.Env = append(cmd.Env, testbin.GitIdentity...)
	raw, err := onTerminal(cmd)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		ts.Fatalf("airlock %s on a terminal: %v", strings.Join(args, " "), err)
	}
	seen, serr := screen(raw)
	if serr != nil {
		ts.Fatalf("airlock %s on a terminal: %v\nraw: %q", strings.Join(args, " "), serr, raw)
	}
	ts.Logf("[terminal]\n%s", seen)
	if werr := os.WriteFile(file, []byte(seen), 0o644); werr != nil {
		ts.Fatalf("%v", werr)
	}
	return err
}

// overlayWorks reports whether `airlock doctor` finds overlay supported.
// Under CI=true, as root, a missing overlay is an error: CI provides it,
// and a script must not skip its overlay half there unseen.
func overlayWorks() (bool, error) {
	dir, err := os.MkdirTemp("", "airlock-doctor-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(airlockBin, "doctor", "--json")
	cmd.Env = testbin.Environ(filepath.Join(dir, "state"), dir)
	out, err := cmd.Output()
	if err != nil {
		return false, fmt.Errorf("airlock doctor --json: %w", err)
	}
	var doc struct {
		Checks []struct {
			Name      string `json:"name"`
			Supported bool   `json:"supported"`
			Reason    string `json:"reason"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return false, fmt.Errorf("airlock doctor --json: %w", err)
	}
	for _, c := range doc.Checks {
		if c.Name != "overlay" {
			continue
		}
		if !c.Supported && os.Geteuid() == 0 && testbin.InCI() {
			return false, fmt.Errorf("overlay is unsupported here (%s), and CI=true", c.Reason)
		}
		return c.Supported, nil
	}
	return false, errors.New("airlock doctor --json has no overlay check")
}
