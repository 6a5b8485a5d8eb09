package airlock_test

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/testbin"
)

// openExec opens a transaction over a base holding a.txt.
func openExec(t *testing.T) (*airlock.Store, *airlock.Tx) {
	t.Helper()
	base := filepath.Join(t.TempDir(), "base")
	testbin.WriteFiles(t, base, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	st, err := airlock.OpenStore(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := st.Open(t.Context(), airlock.OpenOptions{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	return st, tx
}

// TestTxExec: Exec runs a command in the open transaction's staged tree,
// at the base's path where it can, and leaves the transaction open: what
// the command wrote is its change set, which a later commit lands. A
// command that fails is a result, not an error.
func TestTxExec(t *testing.T) {
	st, tx := openExec(t)
	res, err := tx.Exec(t.Context(), airlock.ExecOptions{
		Argv: []string{"sh", "-c", `echo "$AIRLOCK_TX $PWD"; cat b.txt; echo built > out.txt; echo warn >&2`},
		Dir:  "sub", SamePath: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantDir := filepath.Join(tx.Path(), "sub")
	if res.SamePath {
		wantDir = filepath.Join(tx.Base(), "sub")
	} else if res.Fallback == "" {
		t.Error("not at the base's path, and no fallback said why")
	}
	if got, want := string(res.Stdout), tx.ID()+" "+wantDir+"\nb\n"; res.ExitCode != 0 || got != want || string(res.Stderr) != "warn\n" || res.StdoutCut != 0 {
		t.Errorf("exec: code %d stdout %q stderr %q, want 0 %q \"warn\\n\"", res.ExitCode, got, res.Stderr, want)
	}
	if status, _ := tx.Status(); status != airlock.StatusOpen {
		t.Errorf("after exec the transaction is %s, want open", status)
	}
	if testbin.Exists(filepath.Join(tx.Base(), "sub/out.txt")) {
		t.Fatal("exec wrote the base")
	}

	res, err = tx.Exec(t.Context(), airlock.ExecOptions{Argv: []string{"sh", "-c", "exit 3"}})
	if err != nil || res.ExitCode != 3 {
		t.Errorf("exit 3: %+v %v", res, err)
	}
	res, err = tx.Exec(t.Context(), airlock.ExecOptions{Argv: []string{"airlock-test-no-such-command"}})
	if err != nil || res.ExitCode != 127 || !strings.Contains(string(res.Stderr), "not found") {
		t.Errorf("a missing command: %+v %v, want exit 127 saying not found", res, err)
	}

	tx2, err := st.Tx(tx.ID())
	if err != nil {
		t.Fatal(err)
	}
	out, err := tx2.Commit(t.Context(), airlock.CommitOptions{})
	if err != nil || out.Outcome != airlock.Committed || out.Added != 1 {
		t.Fatalf("commit after exec: %+v %v", out, err)
	}
	if got := testbin.ReadFile(t, filepath.Join(tx.Base(), "sub/out.txt")); got != "built\n" {
		t.Errorf("out.txt = %q after the commit", got)
	}
	// Settled, the transaction runs nothing.
	_, err = tx2.Exec(t.Context(), airlock.ExecOptions{Argv: []string{"true"}})
	var notOpen *airlock.NotOpenError
	if !errors.As(err, &notOpen) || notOpen.Status != airlock.StatusCommitted || notOpen.Tx != tx.ID() {
		t.Errorf("exec in a committed transaction: %v, want a *NotOpenError naming it committed", err)
	}
}

// TestTxExecBounds: a timeout ends the command, and each output stream
// keeps its first and last halves up to the limit, counting what it drops.
func TestTxExecBounds(t *testing.T) {
	_, tx := openExec(t)
	start := time.Now()
	res, err := tx.Exec(t.Context(), airlock.ExecOptions{Argv: []string{"sh", "-c", "echo started; exec sleep 600"}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != 128+int(syscall.SIGTERM) || string(res.Stdout) != "started\n" {
		t.Errorf("timeout: %+v, want timed out, ended by SIGTERM, its output kept", res)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("a 300 ms timeout returned after %v", d)
	}

	// 100,000 bytes: "A" then 99,998 "x" then "Z".
	res, err = tx.Exec(t.Context(), airlock.ExecOptions{
		Argv:        []string{"sh", "-c", `printf A; head -c 99998 /dev/zero | tr '\0' x; printf Z`},
		OutputLimit: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "A" + strings.Repeat("x", 998) + "Z"
	if string(res.Stdout) != want || res.StdoutCut != 99000 {
		t.Errorf("bounded output: %d bytes kept, %d cut, starts %q ends %q; want 1000 kept (A…Z), 99000 cut", len(res.Stdout), res.StdoutCut, res.Stdout[:min(5, len(res.Stdout))], res.Stdout[max(0, len(res.Stdout)-5):])
	}

	for _, o := range []airlock.ExecOptions{
		{Argv: []string{"true"}, Dir: "../outside"},
		{Argv: []string{"true"}, Dir: "/etc"},
		{Argv: nil},
		{Argv: []string{"true"}, Timeout: -time.Second},
	} {
		if _, err := tx.Exec(t.Context(), o); err == nil || (o.Dir != "" && !strings.Contains(err.Error(), o.Dir)) {
			t.Errorf("exec %+v: %v, want an error naming what is wrong", o, err)
		}
	}
}

// TestTxExecEndsWhatItLeaves: a command that leaves a process running,
// in a session of its own and deaf to SIGTERM, returns with that process
// ended (contained): no process the command started holds the staged
// tree once Exec has returned. The leftover holds a FIFO of the tree open
// for writing; a read of it finds no writer.
func TestTxExecEndsWhatItLeaves(t *testing.T) {
	_, tx := openExec(t)
	res, err := tx.Exec(t.Context(), airlock.ExecOptions{
		Argv: []string{"sh", "-c", `mkfifo f; (trap '' TERM; setsid sh -c 'exec 3<>f; echo up > ready; while :; do sleep 1; done') >/dev/null 2>&1 & while [ ! -s ready ]; do :; done`},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Contained {
		testbin.Missing(t, "exec ran uncontained (%s): no PID namespace here", res.Uncontained)
	}
	if len(res.Ended) == 0 {
		t.Errorf("the leftover was not reported ended: %+v", res)
	}
	fd, err := syscall.Open(filepath.Join(tx.Path(), "f"), syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// No writer: EOF at once. A writer alive: EAGAIN.
	if n, err := syscall.Read(fd, make([]byte, 1)); n != 0 || err != nil {
		t.Errorf("the FIFO still has a writer after exec returned: read %d, %v", n, err)
	}
}
