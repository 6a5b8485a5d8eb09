package launch_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/testbin"
)

// injected is what the test's command tries to type into its terminal: a
// whole line, which a shell reading the terminal would run.
const injected = "echo INJECTED\n"

// tiocstiCommand is the command of a terminal test: it tries to type
// injected into its controlling terminal (stdin) with TIOCSTI, tries
// TIOCLINUX on it, asks for its window size (an ioctl the guard must let
// through), and prints what each got, one "name=result" line each, and
// whether it runs with no_new_privs ("nnp=0" or "nnp=1").
func tiocstiCommand() {
	var stiErr error
	for i := 0; i < len(injected) && (i == 0 || stiErr == nil); i++ {
		stiErr = ioctlByte(unix.TIOCSTI, injected[i])
	}
	fmt.Printf("tiocsti=%s\n", errName(stiErr))
	// Subcode 3 is paste: on a pseudo-terminal, not a virtual console,
	// the kernel has no TIOCLINUX (ENOTTY) unless the guard refuses first.
	fmt.Printf("tioclinux=%s\n", errName(ioctlByte(unix.TIOCLINUX, 3)))
	_, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
	fmt.Printf("winsz=%s\n", errName(err))
	status, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "NoNewPrivs:"); ok {
			fmt.Printf("nnp=%s\n", strings.TrimSpace(v))
		}
	}
	os.Exit(0)
}

func ioctlByte(req uint, b byte) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, 0, uintptr(req), uintptr(unsafe.Pointer(&b))); e != 0 {
		return e
	}
	return nil
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := err.(syscall.Errno); ok {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

// guardRunner is airlock in a terminal test: started as the leader of a
// session whose controlling terminal is a pseudo-terminal (its stdin), it
// runs the test binary as tiocstiCommand under launch.Run, the way
// LAUNCH_TEST_HOW says, and exits with the command's code (255 when Run
// failed, saying why on stderr). LAUNCH_TEST_DENY_SECCOMP=EPERM|EINVAL
// first puts the runner in a sandbox whose own filter answers
// prctl(PR_SET_SECCOMP) so.
func guardRunner() {
	if e := os.Getenv("LAUNCH_TEST_DENY_SECCOMP"); e != "" {
		errno := map[string]syscall.Errno{"EPERM": unix.EPERM, "EINVAL": unix.EINVAL}[e]
		if err := denySeccomp(errno); err != nil {
			fmt.Fprintln(os.Stderr, "deny seccomp:", err)
			os.Exit(3)
		}
	}
	exe, _ := os.Executable()
	wd, _ := os.Getwd()
	spec := launch.Spec{
		Argv: []string{exe}, Staged: wd, Base: os.Getenv("LAUNCH_TEST_BASE"),
		Env:   []string{testMode + "=tiocsti", "PATH=" + os.Getenv("PATH")},
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	}
	switch os.Getenv("LAUNCH_TEST_HOW") {
	case "contained":
		spec.Contain = true
	case "same-path":
		spec.SamePath = true
	case "validator":
		spec.SamePath, spec.Contain, spec.EndGroup = true, true, true
	}
	res, err := launch.Run(context.Background(), spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	fmt.Printf("contained=%v samepath=%v\n", res.Contained, res.SamePath)
	os.Exit(res.ExitCode & 0xff)
}

// denySeccomp installs, on every thread of this process, a filter that
// fails prctl(PR_SET_SECCOMP) with errno: the sandbox a run may find
// itself in. It compares the native numbers alone, which is enough for a
// process that makes no other ABI's calls.
func denySeccomp(errno syscall.Errno) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(k uint32, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	prog := []unix.SockFilter{
		ld(0), jeq(unix.SYS_PRCTL, 3),
		ld(16), jeq(unix.PR_SET_SECCOMP, 1), // args[0], low half (little-endian)
		ret(unix.SECCOMP_RET_ERRNO | uint32(errno)),
		ret(unix.SECCOMP_RET_ALLOW),
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}

// terminalRun is what a terminal test saw: the runner's output and exit
// code, and how many bytes the terminal's input queue held once it had
// exited (what the user's shell would read next).
type terminalRun struct {
	out, errOut string
	code        int
	pending     int
}

// runOnTerminal starts guardRunner in a new session whose controlling
// terminal is a fresh pseudo-terminal, as a shell starts airlock, and
// waits for it.
func runOnTerminal(t *testing.T, how string, env ...string) terminalRun {
	t.Helper()
	_, slave := openPTY(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	base, staged := roots(t)
	ctx, cancel := context.WithTimeout(t.Context(), readyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Dir = staged
	cmd.Env = append(os.Environ(), append(env, testMode+"=runguard", "LAUNCH_TEST_HOW="+how, "LAUNCH_TEST_BASE="+base)...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &out, &errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Run()
	r := terminalRun{out: out.String(), errOut: errOut.String(), code: cmd.ProcessState.ExitCode()}
	if err != nil && r.code < 0 {
		t.Fatalf("runner: %v\n%s%s", err, r.out, r.errOut)
	}
	if r.pending, err = unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ); err != nil {
		t.Fatalf("TIOCINQ: %v", err)
	}
	return r
}

// requireSeccomp skips, naming why, where the test's own denial filter is
// not written for the machine or the kernel has no seccomp filters.
func requireSeccomp(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the test's own filters are written for little-endian amd64 and arm64, not %s", runtime.GOARCH)
	}
	if _, err := os.Stat("/proc/sys/kernel/seccomp/actions_avail"); err != nil {
		testbin.Missing(t, "this kernel has no seccomp filters: %v", err)
	}
}

// TestTerminalGuard: a command run through the helper (contained, in
// same-path mode, as a validator) that has the user's terminal as its
// controlling terminal cannot type into it: TIOCSTI and TIOCLINUX fail
// with EPERM and the terminal's input queue stays empty, while other
// ioctls (TIOCGWINSZ) still work; as root, the guard leaves no_new_privs
// unset, so that sudo in the command keeps working. The same command run directly, with no
// guard, proves the test would see an injection: on this kernel TIOCSTI
// works there, and the queue holds the line.
func TestTerminalGuard(t *testing.T) {
	requireSeccomp(t)
	ctl := runOnTerminal(t, "direct")
	if !strings.Contains(ctl.out, "tiocsti=ok") {
		t.Logf("unguarded, TIOCSTI fails here too (the kernel refuses it: dev.tty.legacy_tiocsti = 0?): %s", ctl.out)
	} else if ctl.pending != len(injected) {
		t.Fatalf("unguarded, the command typed into its terminal, yet the input queue holds %d bytes, not %d: this test cannot see an injection", ctl.pending, len(injected))
	}
	if ok, reason := launch.ContainSupport(); !ok {
		testbin.Missing(t, "PID namespaces unavailable here: %s", reason)
	}
	hows := []string{"contained", "validator"}
	if ok, _ := launch.SamePathSupport(); ok {
		hows = append(hows, "same-path")
	}
	for _, how := range hows {
		t.Run(how, func(t *testing.T) {
			r := runOnTerminal(t, how)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
			}
			for _, want := range []string{"tiocsti=EPERM", "tioclinux=EPERM", "winsz=ok"} {
				if !strings.Contains(r.out, want+"\n") {
					t.Errorf("output %q lacks %q", r.out, want)
				}
			}
			if os.Geteuid() == 0 && !strings.Contains(r.out, "nnp=0\n") {
				t.Errorf("as root, the command runs with no_new_privs set (sudo would not work): %s", r.out)
			}
			t.Logf("%q", r.out)
			if r.pending != 0 {
				t.Errorf("the terminal's input queue holds %d bytes the command typed", r.pending)
			}
			if how != "same-path" && !strings.Contains(r.out, "contained=true") {
				t.Errorf("the run was not contained: %s", r.out)
			}
		})
	}
}

// TestTerminalGuardFailsClosed: where seccomp exists but the guard cannot
// be installed (a sandbox that refuses prctl(PR_SET_SECCOMP) with EPERM),
// a contained run does not start the command, and says why; where the
// kernel answers as one without seccomp does (EINVAL), the command runs.
func TestTerminalGuardFailsClosed(t *testing.T) {
	requireSeccomp(t)
	if ok, reason := launch.ContainSupport(); !ok {
		testbin.Missing(t, "PID namespaces unavailable here: %s", reason)
	}
	r := runOnTerminal(t, "contained", "LAUNCH_TEST_DENY_SECCOMP=EPERM")
	if r.code != 255 || strings.Contains(r.out, "tiocsti=") || !strings.Contains(r.errOut, "could not install the seccomp filter") {
		t.Errorf("denied the guard, the run exited %d (want 255, the command not started, and why):\n%s%s", r.code, r.out, r.errOut)
	}
	r = runOnTerminal(t, "contained", "LAUNCH_TEST_DENY_SECCOMP=EINVAL")
	if r.code != 0 || !strings.Contains(r.out, "winsz=ok") || !strings.Contains(r.out, "contained=true") {
		t.Errorf("without seccomp, the run exited %d (want 0, the command run contained):\n%s%s", r.code, r.out, r.errOut)
	}
}

// TestTerminalSupport: where the helper can run, the guard works and the
// doctor's probe says so.
func TestTerminalSupport(t *testing.T) {
	requireSeccomp(t)
	if ok, reason := launch.ContainSupport(); !ok {
		testbin.Missing(t, "PID namespaces unavailable here: %s", reason)
	}
	ok, reason := launch.TerminalSupport()
	if !ok {
		t.Fatalf("TerminalSupport = false: %s", reason)
	}
	t.Log(reason)
}
