package airlock_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockdev/airlock"
)

// TestStoreRun drives Store.Run as a harness would, without the CLI: the
// command's exit code alone settles its transaction, and the error says
// which way.
func TestStoreRun(t *testing.T) {
	type want struct {
		outcome airlock.Outcome
		code    int  // the command's exit code
		cmdErr  bool // a *CommandError
		started bool // the command started (CommandError.Err is nil)
		refusal bool // a *Refusal
		landed  bool // new.txt reached the base
	}
	cases := []struct {
		name    string
		argv    []string
		protect []string
		want    want
	}{
		{"exit 0 commits", []string{"sh", "-c", `echo new > new.txt`},
			nil, want{outcome: airlock.Committed, landed: true}},
		{"exit 0 without changes", []string{"true"},
			nil, want{outcome: airlock.NoChanges}},
		{"exit 3 discards", []string{"sh", "-c", `echo new > new.txt; exit 3`},
			nil, want{outcome: airlock.Discarded, code: 3, cmdErr: true, started: true}},
		{"death by signal discards", []string{"sh", "-c", `echo new > new.txt; kill -KILL $$`},
			nil, want{outcome: airlock.Discarded, code: 137, cmdErr: true, started: true}},
		{"not found discards", []string{"airlock-test-no-such-command"},
			nil, want{outcome: airlock.Discarded, code: 127, cmdErr: true}},
		{"a refused commit is kept", []string{"sh", "-c", `echo new > new.txt`},
			[]string{"new.txt"}, want{outcome: airlock.Refused, refusal: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "base")
			if err := os.Mkdir(base, 0o755); err != nil {
				t.Fatal(err)
			}
			st, err := airlock.OpenStore(filepath.Join(t.TempDir(), "state"))
			if err != nil {
				t.Fatal(err)
			}
			var endedOpen bool
			res, err := st.Run(t.Context(), airlock.OpenOptions{Base: base, Protect: c.protect}, airlock.RunOptions{
				Argv: c.argv,
				Ended: func(r *airlock.RunResult) {
					// The command has ended; the transaction has not settled yet.
					s, serr := r.Tx.Status()
					endedOpen = serr == nil && s == airlock.StatusOpen && r.Settled == nil
				},
			})
			if res == nil || res.Settled == nil {
				t.Fatalf("Run = %+v, %v; want a settled result", res, err)
			}
			if !endedOpen {
				t.Errorf("Ended was not called between the command's end and the settle")
			}
			if res.Settled.Outcome != c.want.outcome || res.ExitCode != c.want.code {
				t.Errorf("outcome %s, exit code %d; want %s, %d (err %v)", res.Settled.Outcome, res.ExitCode, c.want.outcome, c.want.code, err)
			}
			if res.Succeeded != (c.want.code == 0) {
				t.Errorf("Succeeded = %v for exit code %d", res.Succeeded, res.ExitCode)
			}
			var ce *airlock.CommandError
			var r *airlock.Refusal
			switch {
			case c.want.cmdErr:
				if !errors.As(err, &ce) || ce.ExitCode() != c.want.code || (ce.Err == nil) != c.want.started {
					t.Errorf("err = %v, want a *CommandError with code %d (started: %v)", err, c.want.code, c.want.started)
				}
			case c.want.refusal:
				if !errors.As(err, &r) || r.Kind != airlock.ProtectedPathNotApproved {
					t.Errorf("err = %v, want a ProtectedPathNotApproved refusal", err)
				}
			case err != nil:
				t.Errorf("err = %v, want nil", err)
			}
			if _, serr := os.Stat(filepath.Join(base, "new.txt")); (serr == nil) != c.want.landed {
				t.Errorf("new.txt in the base: %v, want it there: %v", serr == nil, c.want.landed)
			}
			if got := res.Settled.Receipt.ExitCode; got == nil || *got != c.want.code {
				t.Errorf("receipt exit code %v, want %d", got, c.want.code)
			}
		})
	}
}

// TestTxRunEnvAndDir: the command sees its transaction in its environment
// and starts in the counterpart of the directory it was asked to.
func TestTxRunEnvAndDir(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base")
	if err := os.MkdirAll(filepath.Join(base, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	base, err := filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	st, err := airlock.OpenStore(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := st.Open(t.Context(), airlock.OpenOptions{Base: base, ID: "envtx"})
	if err != nil {
		t.Fatal(err)
	}
	// Settling removes the staged workspace: resolve its path first.
	staged, err := filepath.EvalSymlinks(tx.Path())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res, err := tx.Run(t.Context(), airlock.RunOptions{
		Argv:   []string{"sh", "-c", `echo "$AIRLOCK_TX $AIRLOCK_PORT_BASE"; pwd -P`},
		Dir:    filepath.Join(base, "sub"),
		Env:    []string{"PATH=" + os.Getenv("PATH"), "AIRLOCK_TX=stale"},
		Stdout: &out,
	})
	if err != nil || res.Settled.Outcome != airlock.NoChanges {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if want := "envtx " + strconv.Itoa(tx.Record().PortBase); len(lines) != 2 || lines[0] != want {
		t.Fatalf("output %q, want %q then the start directory", out.String(), want)
	}
	if want := filepath.Join(staged, "sub"); lines[1] != want {
		t.Errorf("started in %s, want %s", lines[1], want)
	}
}
