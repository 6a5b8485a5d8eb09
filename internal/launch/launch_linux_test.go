package launch_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/testbin"
)

// mountsAt lists the host mount table's entries whose mount point is p.
func mountsAt(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == p {
			out = append(out, line)
		}
	}
	return out
}

func TestSamePath(t *testing.T) {
	requireSamePath(t)
	for _, dir := range []string{"", "sub"} {
		t.Run("dir="+dir, func(t *testing.T) {
			base, staged := roots(t)
			var out, errOut bytes.Buffer
			res, err := launch.Run(t.Context(), launch.Spec{
				Argv:   []string{"sh", "-c", `cat "$BASE/f"; echo new > "$BASE/g"; pwd; echo "$PWD"; /bin/pwd -P`},
				Staged: staged, Base: base, Dir: dir, SamePath: true,
				Env:    env("BASE=" + base),
				Stdout: &out, Stderr: &errOut,
			})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("Run = %+v, %v (stderr %q)", res, err, errOut.String())
			}
			if !res.SamePath || res.Fallback != "" {
				t.Fatalf("result %+v, want same-path mode used", res)
			}
			cwd := filepath.Join(base, dir)
			want := fmt.Sprintf("staged\n%s\n%s\n%s\n", cwd, cwd, cwd)
			if out.String() != want {
				t.Errorf("output %q, want %q (the staged f, seen at the base's path)", out.String(), want)
			}
			assertFile(t, filepath.Join(staged, "g"), "new\n")
			assertNoFile(t, filepath.Join(base, "g"))
			assertFile(t, filepath.Join(base, "f"), "base\n")
			if m := mountsAt(t, base); len(m) != 0 {
				t.Errorf("the host's mount table gained mounts at the base: %q", m)
			}
		})
	}
}

// TestSamePathIdentity: the command runs as the user who ran airlock, and
// a non-root user gets no capabilities from the namespace the helper used.
func TestSamePathIdentity(t *testing.T) {
	requireSamePath(t)
	base, staged := roots(t)
	var out bytes.Buffer
	res, err := launch.Run(t.Context(), launch.Spec{
		Argv:   []string{"sh", "-c", `id -u; id -g; grep -E '^Cap(Inh|Eff|Amb):' /proc/self/status`},
		Staged: staged, Base: base, SamePath: true, Env: env(), Stdout: &out,
	})
	if err != nil || res.ExitCode != 0 || !res.SamePath {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	lines := strings.Fields(out.String())
	if len(lines) != 8 {
		t.Fatalf("unexpected output %q", out.String())
	}
	if lines[0] != fmt.Sprint(os.Getuid()) || lines[1] != fmt.Sprint(os.Getgid()) {
		t.Errorf("command ran as %s:%s, want %d:%d", lines[0], lines[1], os.Getuid(), os.Getgid())
	}
	if os.Geteuid() != 0 {
		for i := 2; i < 8; i += 2 {
			if strings.Trim(lines[i+1], "0") != "" {
				t.Errorf("%s %s, want none for a non-root user", lines[i], lines[i+1])
			}
		}
	}
}

// TestSamePathMissingDir: a start directory absent from the staged tree is
// airlock's failure, not a missing command, and not a reason to fall back.
func TestSamePathMissingDir(t *testing.T) {
	requireSamePath(t)
	base, staged := roots(t)
	if err := os.Mkdir(filepath.Join(base, "onlybase"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := launch.Run(t.Context(), launch.Spec{
		Argv: []string{"true"}, Staged: staged, Base: base, Dir: "onlybase", SamePath: true, Env: env(),
	})
	if err == nil || res.ExitCode != -1 || res.Fallback != "" || errors.Is(err, launch.ErrNotFound) {
		t.Fatalf("Run = %+v, %v; want a start-directory error", res, err)
	}
	if !strings.Contains(err.Error(), "onlybase") {
		t.Errorf("error %q does not name the directory", err)
	}
}

// TestSamePathFallsBackWhenBaseMissing: when the bind mount cannot be made,
// the command still runs, at the staged path, and the reason is reported.
func TestSamePathFallsBackWhenBaseMissing(t *testing.T) {
	requireSamePath(t)
	_, staged := roots(t)
	var out bytes.Buffer
	res, err := launch.Run(t.Context(), launch.Spec{
		Argv: []string{"sh", "-c", "cat f; pwd"}, Staged: staged, Base: filepath.Join(t.TempDir(), "gone"),
		SamePath: true, Env: env(), Stdout: &out,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if res.SamePath || !strings.Contains(res.Fallback, "bind-mount") {
		t.Errorf("result %+v, want a fallback that names the failed bind mount", res)
	}
	if want := "staged\n" + staged + "\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

func TestSamePathSupport(t *testing.T) {
	ok, reason := launch.SamePathSupport()
	if !ok {
		testbin.Missing(t, "same-path mode unavailable here: %s", reason)
	}
	if reason == "" {
		t.Error("supported, but the reason does not say how")
	}
	t.Log(reason)
}

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testbin.Missing(t, "no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		testbin.Missing(t, "cannot unlock a pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		testbin.Missing(t, "cannot name a pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testbin.Missing(t, "cannot open a pseudo-terminal's slave: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestTerminalSIGINTNotDoubled: Ctrl-C on the terminal signals airlock and
// the command alike; airlock must not forward a second copy.
func TestTerminalSIGINTNotDoubled(t *testing.T) {
	master, slave := openPTY(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), testMode+"=runcountint")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, w, w
	// A new session whose controlling terminal is the pty: the runner's
	// process group is then its foreground group, as in a shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var out strings.Builder
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if sc.Text() == "ready" {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(readyTimeout):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the command never became ready")
	}
	if _, err := master.Write([]byte{0x03}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	err = cmd.Wait()
	<-done
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("runner: %v, output %q", err, out.String())
	}
	if got := ee.ExitCode() - 10; got != 1 {
		t.Errorf("command saw %d SIGINTs for one Ctrl-C, want 1 (exit %d, output %q)", got, ee.ExitCode(), out.String())
	}
}

func playPart() {
	switch os.Getenv(testMode) {
	case "sharedmount":
		sharedMount()
	case "runguard":
		guardRunner()
	case "tiocsti":
		tiocstiCommand()
	}
}

// sharedMount runs in a mount namespace of its own (so the real host is
// never touched) and plays the host whose mounts are shared, as systemd
// makes them: LAUNCH_TEST_DIR becomes a shared mount holding base and
// staged. A same-path run must leave no mount at base behind. Exits 0 when
// it does not, 1 with a message when it does, 3 when the set-up fails.
func sharedMount() {
	dir := os.Getenv("LAUNCH_TEST_DIR")
	fail := func(code int, format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(code)
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		fail(3, "bind %s: %v", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED, ""); err != nil {
		fail(3, "make %s shared: %v", dir, err)
	}
	base, staged := filepath.Join(dir, "base"), filepath.Join(dir, "staged")
	for _, d := range []string{base, staged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			fail(3, "%v", err)
		}
	}
	res, err := launch.Run(context.Background(), launch.Spec{
		Argv: []string{"sh", "-c", `echo new > "$BASE/g"`}, Staged: staged, Base: base, SamePath: true,
		Env: []string{"PATH=" + os.Getenv("PATH"), "BASE=" + base}, Stderr: os.Stderr,
	})
	if err != nil || res.ExitCode != 0 || !res.SamePath {
		fail(1, "Run = %+v, %v", res, err)
	}
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == base {
			fail(1, "the bind mount propagated back: %s", line)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "g")); err == nil {
		fail(1, "the write landed in the base")
	}
	os.Exit(0)
}

// TestNoPropagationToSharedMounts: on hosts whose mounts are shared (the
// systemd default), the helper's bind mount must not propagate back.
func TestNoPropagationToSharedMounts(t *testing.T) {
	requireSamePath(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), testMode+"=sharedmount", "LAUNCH_TEST_DIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		testbin.Missing(t, "cannot play a host with shared mounts: %s", out)
	default:
		if errors.As(err, &ee) {
			t.Fatalf("%s", out)
		}
		testbin.Missing(t, "cannot start a process in its own mount namespace: %v", err)
	}
}

// TestMountInTheCommandsNamespace: a Spec.Mount is mounted at the staged
// path in the command's namespace alone (before the bind over the base in
// same-path mode); what the command writes there lives and dies with that
// mount, and the host's mount table never shows it.
func TestMountInTheCommandsNamespace(t *testing.T) {
	requireSamePath(t)
	for _, samePath := range []bool{true, false} {
		t.Run(fmt.Sprintf("samePath=%v", samePath), func(t *testing.T) {
			base, staged := roots(t)
			var out, errOut bytes.Buffer
			res, err := launch.Run(t.Context(), launch.Spec{
				Argv:   []string{"sh", "-c", `stat -f -c %T .; /bin/pwd -P; [ ! -e f ] && echo new > g`},
				Staged: staged, Base: base, SamePath: samePath, Env: env(),
				Mount:  &launch.Mount{FSType: "tmpfs", Source: "tmpfs", Data: "mode=0755"},
				Stdout: &out, Stderr: &errOut,
			})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("Run = %+v, %v (stderr %q)", res, err, errOut.String())
			}
			if res.SamePath != samePath || res.Fallback != "" {
				t.Errorf("result %+v, want SamePath %v and no fallback", res, samePath)
			}
			cwd := staged
			if samePath {
				cwd = base
			}
			if want := "tmpfs\n" + cwd + "\n"; out.String() != want {
				t.Errorf("output %q, want %q (the mount, at %s)", out.String(), want, cwd)
			}
			assertNoFile(t, filepath.Join(staged, "g"))
			assertNoFile(t, filepath.Join(base, "g"))
			assertFile(t, filepath.Join(staged, "f"), "staged\n")
			if m := append(mountsAt(t, staged), mountsAt(t, base)...); len(m) != 0 {
				t.Errorf("the host's mount table gained mounts: %q", m)
			}
		})
	}
}

// procsWithArg lists the processes (in this PID namespace) whose argument
// list holds arg.
func procsWithArg(arg string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// TestContainEndsWhatTheCommandLeft: whatever a contained command leaves
// running, however it detached (a new session, a cleared environment, a
// double fork, SIGTERM ignored), is named and gone when Run returns, and
// Run does not wait for it to finish on its own. The leftovers say when
// they are running (a line on the command's output), so nothing here
// depends on timing.
func TestContainEndsWhatTheCommandLeft(t *testing.T) {
	if ok, reason := launch.ContainSupport(); !ok {
		testbin.Missing(t, "PID namespaces unavailable here: %s", reason)
	}
	defer launch.SetLeftoverGrace(300 * time.Millisecond)()
	cases := []struct{ name, start string }{
		{"background", `sleep "$ARG" &`},
		{"new session", `setsid sleep "$ARG" &`},
		{"environment cleared", `env -i /bin/sh -c 'exec sleep "$0"' "$ARG" &`},
		{"double fork", `( ( sleep "$ARG" & ) & )`},
		{"SIGTERM ignored", `( trap '' TERM; sleep "$ARG" ) &`},
	}
	for _, m := range modes(t) {
		if !m.contain {
			continue
		}
		for i, c := range cases {
			t.Run(modeName(m)+"/"+c.name, func(t *testing.T) {
				// A number of seconds no other process on the machine has
				// as its argument: sleep's name in /proc.
				arg := fmt.Sprintf("%d.%d%d", 1000+i, os.Getpid(), time.Now().UnixNano()%1e6)
				base, staged := roots(t)
				w, ready, done, _ := readyPipe(t)
				// Ready once the leftover is sleep itself: setsid or a
				// forked shell carries the same words before it execs
				// sleep, and is named by its own name until then.
				script := c.start + `
while [ -z "$(for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -xF "sleep $ARG ")" ]; do :; done
echo ready`
				res, err := launch.Run(t.Context(), launch.Spec{
					Argv: []string{"sh", "-c", script}, Staged: staged, Base: base,
					SamePath: m.samePath, Contain: true, Env: env("ARG=" + arg), Stdout: w, Stderr: w,
				})
				w.Close()
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("Run = %+v, %v", res, err)
				}
				// Everything that held the pipe is gone once Run returned:
				// read to its end before asking what it said.
				<-done
				select {
				case <-ready:
				default:
					t.Fatal("the command never saw its leftover running")
				}
				if !res.Contained {
					t.Fatalf("Contain was asked and PID namespaces work, yet the run says %q", res.Uncontained)
				}
				if left := procsWithArg(arg); len(left) > 0 {
					for _, p := range left {
						n, _ := strconv.Atoi(p)
						syscall.Kill(n, syscall.SIGKILL)
					}
					t.Fatalf("processes %v the command left are still running after Run returned", left)
				}
				named := false
				for _, l := range res.Ended {
					named = named || strings.HasSuffix(l, "(sleep)")
				}
				if !named {
					t.Errorf("Ended = %q, want the sleep named", res.Ended)
				}
			})
		}
	}
}

// TestContainedCommandSeesItsOwnProcesses: inside the namespace, /proc is
// the namespace's: the command's pid as getpid gives it names it there,
// and no process outside the namespace is listed.
func TestContainedCommandSeesItsOwnProcesses(t *testing.T) {
	if ok, reason := launch.ContainSupport(); !ok {
		testbin.Missing(t, "PID namespaces unavailable here: %s", reason)
	}
	res, err, out := run(t, mode{contain: true}, "sh", "-c", `[ "$(cat /proc/$$/comm)" = sh ] && ls /proc | grep -c '^[0-9]'`)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v: %s", res, err, out)
	}
	// The init, the shell, and the ls and grep of its pipeline.
	if n, _ := strconv.Atoi(strings.TrimSpace(out)); n < 2 || n > 4 {
		t.Errorf("the command's /proc lists %s processes: not its namespace's own", out)
	}
}

// BenchmarkRunContained runs `true` the way a watched `airlock run` runs
// its command: in a PID and mount namespace of its own, with the state
// root read-only but for the staged tree, under the seccomp guards. What
// a warm run's launch costs on top of the command itself.
func BenchmarkRunContained(b *testing.B) {
	if ok, reason := launch.ContainSupport(); !ok {
		b.Skipf("no PID namespace here: %s", reason)
	}
	state := b.TempDir()
	staged := filepath.Join(state, "tx", "staged")
	if err := os.MkdirAll(staged, 0o700); err != nil {
		b.Fatal(err)
	}
	spec := launch.Spec{Argv: []string{"true"}, Staged: staged, Env: env(), Contain: true,
		ReadOnly: state, Writable: []string{staged}, Watched: launch.LinkGuard()}
	for b.Loop() {
		res, err := launch.Run(b.Context(), spec)
		if err != nil || res.ExitCode != 0 || !res.Contained {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	}
}
