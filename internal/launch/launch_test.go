package launch_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/launch"
	"github.com/airlockdev/airlock/internal/testbin"
)

// testMode makes the test binary play a part in a test instead of running
// the tests.
const testMode = "LAUNCH_TEST_MODE"

func TestMain(m *testing.M) {
	// First, so that the test binary can be its own same-path helper.
	launch.Init()
	switch os.Getenv(testMode) {
	case "countint":
		countInts()
	case "runcountint":
		runCountInt()
	case "runterm":
		runTerm()
	default:
		playPart()
	}
	os.Exit(m.Run())
}

// readyTimeout bounds the wait for a helper process's handshake: far past
// any load, it only stops a test whose helper is stuck.
const readyTimeout = time.Minute

// countInts prints "ready", then counts the SIGINTs that arrive until a
// SIGTERM does, and exits with 10+count. It says "got SIGINT" at the
// first, and the runner (runCountInt) then sends SIGTERM through the same
// forwarder: any second copy of the SIGINT was sent before it, and of
// signals pending together the lower number is delivered first, so a
// copy is counted however late a busy machine lets it arrive — no window
// of time decides.
func countInts() {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	os.Stdout.WriteString("ready\n")
	n := 0
	for {
		select {
		case s := <-ch:
			if s == syscall.SIGTERM {
				os.Exit(10 + n)
			}
			if n++; n == 1 {
				os.Stdout.WriteString("got SIGINT\n")
			}
		case <-time.After(readyTimeout):
			os.Exit(99)
		}
	}
}

// runCountInt runs countInts under launch.Run and exits with its code.
// With LAUNCH_TEST_SELFINT set it sends itself SIGINT once the child is
// ready, as `kill -INT <airlock>` would; otherwise the SIGINT must come
// from elsewhere (a terminal). Once the child has the SIGINT, it sends
// itself SIGTERM, as a supervisor would, which ends the child's count.
func runCountInt() {
	exe, _ := os.Executable()
	r, w, _ := os.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			os.Stdout.WriteString(sc.Text() + "\n")
			switch {
			case sc.Text() == "ready" && os.Getenv("LAUNCH_TEST_SELFINT") != "":
				syscall.Kill(os.Getpid(), syscall.SIGINT)
			case sc.Text() == "got SIGINT":
				syscall.Kill(os.Getpid(), syscall.SIGTERM)
			}
		}
	}()
	wd, _ := os.Getwd()
	res, err := launch.Run(context.Background(), launch.Spec{
		Argv:   []string{exe},
		Staged: wd,
		Env:    []string{testMode + "=countint"},
		Stdin:  os.Stdin,
		Stdout: w,
		Stderr: os.Stderr,
	})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
	}
	os.Exit(res.ExitCode)
}

// runTerm runs a shell whose TERM trap can only run once its foreground
// child has ended, sends itself SIGTERM once the shell is ready, as a
// supervisor stopping airlock would, and exits with the shell's code.
func runTerm() {
	r, w, _ := os.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			// The child runs sleep before the signal is sent: one sent
			// earlier could reach the shell alone (a child forked after
			// it never gets it; one between fork and exec has the
			// shell's trap and loses it), which says nothing of airlock.
			if pid, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				os.Stdout.WriteString("child " + pid + "\n")
				syscall.Kill(os.Getpid(), syscall.SIGTERM)
			}
		}
	}()
	wd, _ := os.Getwd()
	res, err := launch.Run(context.Background(), launch.Spec{
		Argv:     []string{"sh", "-c", `trap "exit 7" TERM; sleep 3600 & p=$!; while [ "$(cat /proc/$p/comm 2>/dev/null)" != sleep ]; do :; done; echo "ready $p"; wait; exit 3`},
		Staged:   wd,
		Base:     os.Getenv("LAUNCH_TEST_BASE"),
		SamePath: os.Getenv("LAUNCH_TEST_BASE") != "",
		Contain:  os.Getenv("LAUNCH_TEST_CONTAIN") != "",
		Env:      []string{"PATH=" + os.Getenv("PATH")},
		Stdout:   w,
		Stderr:   os.Stderr,
	})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
	}
	os.Exit(res.ExitCode)
}

// mode is one way of running: same-path or at the staged path, contained
// in a PID namespace of its own or not.
type mode struct{ samePath, contain bool }

// modes are the ways of running this machine supports (CI must support
// them all).
func modes(t *testing.T) []mode {
	t.Helper()
	out := []mode{{}}
	if ok, reason := launch.SamePathSupport(); ok {
		out = append(out, mode{samePath: true})
	} else if testbin.InCI() {
		t.Fatalf("same-path mode unavailable here: %s; under CI=true its half of the test must run", reason)
	} else {
		t.Logf("same-path mode unavailable here (%s): only the staged-path mode runs", reason)
	}
	if ok, reason := launch.ContainSupport(); ok {
		for _, m := range slices.Clone(out) {
			out = append(out, mode{samePath: m.samePath, contain: true})
		}
	} else if testbin.InCI() {
		t.Fatalf("PID namespaces unavailable here: %s; under CI=true the contained runs must run", reason)
	} else {
		t.Logf("PID namespaces unavailable here (%s): the contained runs do not run", reason)
	}
	return out
}

func modeName(m mode) string {
	name := "staged-path"
	if m.samePath {
		name = "same-path"
	}
	if m.contain {
		name += "-contained"
	}
	return name
}

// requireSamePath skips the test where same-path mode cannot be had.
func requireSamePath(t *testing.T) {
	t.Helper()
	if ok, reason := launch.SamePathSupport(); !ok {
		testbin.Missing(t, "same-path mode unavailable here: %s", reason)
	}
}

// roots makes a base and a staged tree, each with f holding its own name
// and an empty directory sub.
func roots(t *testing.T) (base, staged string) {
	t.Helper()
	base, staged = filepath.Join(t.TempDir(), "base"), filepath.Join(t.TempDir(), "staged")
	for _, d := range []string{base, staged} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte(filepath.Base(d)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return base, staged
}

func env(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH")}, extra...)
}

// run runs argv in a fresh pair of trees and returns its result and
// output.
func run(t *testing.T, m mode, argv ...string) (launch.Result, error, string) {
	t.Helper()
	base, staged := roots(t)
	var out bytes.Buffer
	res, err := launch.Run(t.Context(), launch.Spec{
		Argv: argv, Staged: staged, Base: base, Env: env(), SamePath: m.samePath, Contain: m.contain,
		Stdout: &out, Stderr: &out,
	})
	if m.samePath && !res.SamePath && err == nil {
		t.Fatalf("same-path mode was supported but not used: %s", res.Fallback)
	}
	if m.contain != res.Contained && res.ExitCode != 127 && res.ExitCode != 126 {
		t.Fatalf("Contain %v, but the result says contained %v (%s)", m.contain, res.Contained, res.Uncontained)
	}
	return res, err, out.String()
}

func TestExitCode(t *testing.T) {
	for _, sp := range modes(t) {
		for _, code := range []string{"0", "1", "3", "255"} {
			t.Run(modeName(sp)+"/"+code, func(t *testing.T) {
				res, err, out := run(t, sp, "sh", "-c", "exit "+code)
				if err != nil {
					t.Fatalf("Run: %v (output %q)", err, out)
				}
				if got := res.ExitCode; got != atoi(code) || res.Signaled {
					t.Errorf("exit code %d signaled %v, want %s", got, res.Signaled, code)
				}
			})
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestCannotExecute(t *testing.T) {
	for _, sp := range modes(t) {
		tests := []struct {
			name     string
			argv     []string
			path     string // PATH, relative entries are under staged
			want     error
			code     int
			wantText string
			also     error
		}{
			{name: "not on PATH", argv: []string{"airlock-no-such-command"}, want: launch.ErrNotFound, code: 127, wantText: "airlock-no-such-command: command not found"},
			{name: "missing relative", argv: []string{"./missing"}, want: launch.ErrNotFound, code: 127},
			{name: "not executable", argv: []string{"./plain"}, want: launch.ErrNotExecutable, code: 126, wantText: "./plain: permission denied", also: fs.ErrPermission},
			{name: "directory", argv: []string{"./sub"}, want: launch.ErrNotExecutable, code: 126},
			{name: "bad format", argv: []string{"./garbage"}, want: launch.ErrNotExecutable, code: 126, wantText: "./garbage: exec format error"},
			{name: "only non-executable on PATH", argv: []string{"plain"}, path: "bin", want: launch.ErrNotExecutable, code: 126},
			{name: "found on relative PATH", argv: []string{"ok"}, path: "nothing:bin", code: 7},
		}
		for _, tc := range tests {
			t.Run(modeName(sp)+"/"+tc.name, func(t *testing.T) {
				base, staged := roots(t)
				write := func(rel, content string, perm os.FileMode) {
					p := filepath.Join(staged, rel)
					os.MkdirAll(filepath.Dir(p), 0o755)
					if err := os.WriteFile(p, []byte(content), perm); err != nil {
						t.Fatal(err)
					}
				}
				write("plain", "#!/bin/sh\nexit 0\n", 0o644)
				write("bin/plain", "#!/bin/sh\nexit 0\n", 0o644)
				write("bin/ok", "#!/bin/sh\nexit 7\n", 0o755)
				write("garbage", "\x00\x01\x02\x03 not a program", 0o755)
				path := os.Getenv("PATH")
				if tc.path != "" {
					path = tc.path
				}
				res, err := launch.Run(t.Context(), launch.Spec{
					Argv: tc.argv, Staged: staged, Base: base, SamePath: sp.samePath, Contain: sp.contain, Env: []string{"PATH=" + path},
				})
				if tc.want == nil {
					if err != nil || res.ExitCode != tc.code {
						t.Fatalf("Run = %+v, %v; want exit %d", res, err, tc.code)
					}
					return
				}
				if !errors.Is(err, tc.want) {
					t.Fatalf("Run error = %v, want %v", err, tc.want)
				}
				if res.ExitCode != tc.code {
					t.Errorf("exit code %d, want %d", res.ExitCode, tc.code)
				}
				var ee *launch.ExecError
				if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
					t.Errorf("error %v is not an *ExecError with code %d", err, tc.code)
				}
				if tc.wantText != "" && err.Error() != tc.wantText {
					t.Errorf("message %q, want %q", err.Error(), tc.wantText)
				}
				if tc.also != nil && !errors.Is(err, tc.also) {
					t.Errorf("error %v does not match %v", err, tc.also)
				}
			})
		}
	}
}

func TestSignalDeath(t *testing.T) {
	for _, sp := range modes(t) {
		t.Run(modeName(sp), func(t *testing.T) {
			res, err, out := run(t, sp, "sh", "-c", "kill -KILL $$")
			if err != nil {
				t.Fatalf("Run: %v (output %q)", err, out)
			}
			if !res.Signaled || res.Signal != syscall.SIGKILL || res.ExitCode != 128+9 {
				t.Errorf("result %+v, want signaled by SIGKILL with exit code 137", res)
			}
		})
	}
}

// readyPipe gives a command's stdout and a channel closed when it prints
// "ready"; the rest of the output is collected in the returned buffer once
// done is closed.
func readyPipe(t *testing.T) (w *os.File, ready, done <-chan struct{}, rest *bytes.Buffer) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); r.Close() })
	readyc, donec := make(chan struct{}), make(chan struct{})
	rest = new(bytes.Buffer)
	go func() {
		defer close(donec)
		sc := bufio.NewScanner(r)
		seen := false
		for sc.Scan() {
			if !seen && sc.Text() == "ready" {
				seen = true
				close(readyc)
				continue
			}
			rest.WriteString(sc.Text() + "\n")
		}
	}()
	return w, readyc, donec, rest
}

// TestForwardSIGTERM sends SIGTERM to the test process itself, as a
// supervisor would to airlock: the command must get it, and the test
// process must survive it.
func TestForwardSIGTERM(t *testing.T) {
	for _, sp := range modes(t) {
		t.Run(modeName(sp), func(t *testing.T) {
			base, staged := roots(t)
			w, ready, _, _ := readyPipe(t)
			ran := make(chan struct{})
			go func() {
				select {
				case <-ready:
					syscall.Kill(os.Getpid(), syscall.SIGTERM)
				case <-ran:
				}
			}()
			res, err := launch.Run(t.Context(), launch.Spec{
				Argv:   []string{"sh", "-c", `trap "exit 42" TERM; echo ready; while :; do sleep 0.05; done`},
				Staged: staged, Base: base, SamePath: sp.samePath, Contain: sp.contain, Env: env(), Stdout: w,
			})
			close(ran)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 42 {
				t.Errorf("exit code %d, want 42 (the command's TERM trap)", res.ExitCode)
			}
		})
	}
}

// TestForwardSIGINT: with no controlling terminal, a SIGINT sent to airlock
// reaches the command exactly once. It runs in a new session so that the
// terminal `go test` may have been started from plays no part.
func TestForwardSIGINT(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), testMode+"=runcountint", "LAUNCH_TEST_SELFINT=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("runner: %v, output %q", err, out)
	}
	if got := ee.ExitCode() - 10; got != 1 {
		t.Errorf("command saw %d SIGINTs, want 1 (exit %d, output %q)", got, ee.ExitCode(), out)
	}
}

// TestForwardSIGTERMToGroup: without a controlling terminal, SIGTERM sent
// to airlock reaches the command's whole process group at once, so a shell
// waiting for its child runs its trap now, not when the child ends. The
// child would sleep for an hour: that it is gone decides, not how soon the
// runner ended, which on a busy machine says nothing.
func TestForwardSIGTERMToGroup(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range modes(t) {
		t.Run(modeName(sp), func(t *testing.T) {
			base, staged := roots(t)
			cmd := exec.Command(exe)
			cmd.Dir = staged
			cmd.Env = append(os.Environ(), testMode+"=runterm")
			if sp.samePath {
				cmd.Env = append(cmd.Env, "LAUNCH_TEST_BASE="+base)
			}
			if sp.contain {
				cmd.Env = append(cmd.Env, "LAUNCH_TEST_CONTAIN=1")
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			// The orphaned sleep would hold a pipe open; a file does not.
			out, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var stuck bool
			select {
			case err = <-exited:
			case <-time.After(readyTimeout):
				// A runner waiting for the child's hour.
				stuck = true
				cmd.Process.Kill()
				err = <-exited
			}
			b, _ := os.ReadFile(out.Name())
			var pid int
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "child "); ok {
					pid, _ = strconv.Atoi(v)
				}
			}
			if pid > 0 {
				t.Cleanup(func() {
					if !gone(pid, 0) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				})
			}
			if stuck {
				t.Fatalf("the runner still ran %v after its SIGTERM: SIGTERM did not end the shell at once; output %q", readyTimeout, b)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 7 {
				t.Fatalf("runner: %v, want exit 7 (the command's TERM trap); output %q", err, b)
			}
			// The shell's child must have had the signal too: it is gone.
			if pid <= 0 {
				t.Fatalf("the runner did not report the shell's child: %q", b)
			}
			if sp.contain {
				// The pid is the namespace's number for it, and the
				// namespace ended with the run: nothing of it is left.
				return
			}
			if !gone(pid, readyTimeout) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("SIGTERM reached the shell but not its child %d", pid)
			}
		})
	}
}

// gone waits up to d for process pid to end: no such process, or a zombie
// nobody reaped yet (it has ended all the same).
func gone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return true
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestContextCancel(t *testing.T) {
	base, staged := roots(t)
	w, ready, _, _ := readyPipe(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-ready
		cancel()
	}()
	res, err := launch.Run(ctx, launch.Spec{
		Argv:   []string{"sh", "-c", `trap "exit 0" TERM; echo ready; while :; do sleep 0.05; done`},
		Staged: staged, Base: base, Env: env(), Stdout: w,
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %+v, %v; want an error wrapping context.Canceled even though the command exited 0", res, err)
	}
}

func TestStagedPath(t *testing.T) {
	base, staged := roots(t)
	var out bytes.Buffer
	res, err := launch.Run(t.Context(), launch.Spec{
		Argv:   []string{"sh", "-c", `cat f; echo new > g; pwd; echo "$PWD"`},
		Staged: staged, Base: base, Dir: "", Env: env(), Stdout: &out,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if res.SamePath || res.Fallback != "" {
		t.Errorf("same-path not asked for, yet result %+v", res)
	}
	want := "staged\n" + staged + "\n" + staged + "\n"
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	assertFile(t, filepath.Join(staged, "g"), "new\n")
	assertNoFile(t, filepath.Join(base, "g"))
}

func TestEnvAndStdin(t *testing.T) {
	for _, sp := range modes(t) {
		t.Run(modeName(sp), func(t *testing.T) {
			base, staged := roots(t)
			var out bytes.Buffer
			res, err := launch.Run(t.Context(), launch.Spec{
				Argv:   []string{"sh", "-c", `echo "FOO=$FOO"; env | grep -c AIRLOCK_LAUNCH; cat`},
				Staged: staged, Base: base, Dir: "sub", SamePath: sp.samePath, Contain: sp.contain,
				Env:   env("FOO=bar baz"),
				Stdin: strings.NewReader("from stdin\n"), Stdout: &out,
			})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			// grep -c prints 0 (and exits 1, hidden by cat) when the helper's
			// marker is gone.
			if want := "FOO=bar baz\n0\nfrom stdin\n"; out.String() != want {
				t.Errorf("output %q, want %q", out.String(), want)
			}
		})
	}
}

func TestBadSpec(t *testing.T) {
	_, staged := roots(t)
	tests := []struct {
		name string
		spec launch.Spec
	}{
		{"no command", launch.Spec{Staged: staged}},
		{"relative staged", launch.Spec{Argv: []string{"true"}, Staged: "rel"}},
		{"dir escapes", launch.Spec{Argv: []string{"true"}, Staged: staged, Dir: "../x"}},
		{"absolute dir", launch.Spec{Argv: []string{"true"}, Staged: staged, Dir: "/tmp"}},
		{"missing dir", launch.Spec{Argv: []string{"true"}, Staged: staged, Dir: "nope"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := launch.Run(t.Context(), tc.spec)
			if err == nil || res.ExitCode != -1 {
				t.Fatalf("Run = %+v, %v; want an error and exit code -1", res, err)
			}
			if errors.Is(err, launch.ErrNotFound) {
				t.Errorf("a bad spec reported as a missing command: %v", err)
			}
		})
	}
}

func assertFile(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s holds %q, want %q", p, b, want)
	}
}

func assertNoFile(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists (or cannot be checked: %v), want it absent", p, err)
	}
}
