package main_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2ERunCannotTypeIntoTheTerminal: `airlock run` started from a shell
// on a terminal (a session whose controlling terminal is a fresh
// pseudo-terminal), whose command, and whose validator, try to type a
// command into that terminal for the shell to run once airlock returns
// (ioctl TIOCSTI). Both get EPERM and the terminal's input queue stays
// empty, while asking it for its window size still works; as root and as
// a user who is not.
func TestE2ERunCannotTypeIntoTheTerminal(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("as this user", func(t *testing.T) {
		x := newH(t)
		testbin.WriteFiles(t, x.base, map[string]string{"a": "a\n"})
		terminalAttack(t, airlockBin, exe, x.base, t.TempDir(), x.environ(), nil)
	})
	t.Run("as another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("the tests run as a user who is not root: the subtest above is that user")
		}
		w := newRootlessWorld(t, map[string]string{"a": "a\n"})
		if r := w.airlock("doctor"); !doctorSupports(r.Stdout, "contain") {
			testbin.Missing(t, "a user who is not root cannot contain run's command here:\n%s", r.Stdout)
		}
		// The test binary plays the command, from where that user can
		// run it.
		part := filepath.Join(filepath.Dir(w.bin), "part")
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(part, b, 0o755); err != nil {
			t.Fatal(err)
		}
		terminalAttack(t, w.bin, part, w.base, w.out, testbin.Environ(w.state, w.home), w.cred)
	})
}

// terminalAttack runs the attack of TestE2ERunCannotTypeIntoTheTerminal
// with the binary bin over base, as cred (nil: this process's user), the
// test binary at part playing the command and the validator; the
// validator reports into out.
func terminalAttack(t *testing.T, bin, part, base, out string, env []string, cred *syscall.Credential) {
	t.Helper()
	slave := openTerminal(t)
	report := filepath.Join(out, "validator")
	validator := fmt.Sprintf("'%s' '%stiocsti' tty '%s'", part, partPrefix, report)
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--validate", validator, "--", part, partPrefix+"tiocsti", "0", "-")
	cmd.Dir, cmd.Env = base, env
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Credential: cred}
	if err := cmd.Run(); err != nil {
		t.Fatalf("airlock run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	validated, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the validator left no report: %v\nstderr:\n%s", err, stderr.String())
	}
	for who, got := range map[string]string{"the command": stdout.String(), "the validator": string(validated)} {
		if want := "tiocsti=operation not permitted\nwinsz=ok\n"; got != want {
			t.Errorf("%s reported %q, want %q", who, got, want)
		}
	}
	if n, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ); err != nil || n != 0 {
		t.Errorf("the terminal's input queue holds %d bytes (%v): the run typed into it", n, err)
	}
	if !strings.Contains(stderr.String(), "airlock.outcome=committed") {
		t.Errorf("the run did not commit:\n%s", stderr.String())
	}
}

// openTerminal opens a fresh pseudo-terminal and returns its slave side
// (the terminal a shell would have); the master stays open until the
// test ends, so that the slave keeps its input queue.
func openTerminal(t *testing.T) *os.File {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testbin.Missing(t, "no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock a pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("name a pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal's slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
