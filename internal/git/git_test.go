package git

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// fakeGit puts a shell script named git first on PATH.
func fakeGit(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// repo makes a git repository with one commit of one file, using git directly as the
// oracle.
func repo(t *testing.T) string {
	t.Helper()
	testbin.Require(t, "git", "package git runs it")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "a.txt"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func TestEnvironScrubsRelocatingVariables(t *testing.T) {
	in := []string{
		"PATH=/bin", "HOME=/home/u", "GIT_EXEC_PATH=/usr/lib/git-core",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TRACE=1",
		"GIT_DIR=/elsewhere/.git", "GIT_WORK_TREE=/elsewhere", "GIT_INDEX_FILE=/elsewhere/index",
		"GIT_OBJECT_DIRECTORY=/elsewhere/objects", "GIT_ALTERNATE_OBJECT_DIRECTORIES=/x",
		"GIT_COMMON_DIR=/elsewhere/.git", "GIT_CEILING_DIRECTORIES=/", "GIT_NAMESPACE=ns",
		"GIT_CONFIG_PARAMETERS='core.worktree'='/elsewhere'", "GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=core.bare", "GIT_CONFIG_VALUE_0=true",
		"GIT_TERMINAL_PROMPT=1", "GIT_LITERAL_PATHSPECS=0", "LC_ALL=de_DE.UTF-8",
		"GIT_ASKPASS=/usr/bin/ksshaskpass", "SSH_ASKPASS=/usr/bin/ksshaskpass",
	}
	got := environ(in)
	want := []string{
		"PATH=/bin", "HOME=/home/u", "GIT_EXEC_PATH=/usr/lib/git-core",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TRACE=1",
		// ssh's, for a user's own ssh command; git stops at GIT_ASKPASS.
		"SSH_ASKPASS=/usr/bin/ksshaskpass",
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "GIT_LITERAL_PATHSPECS=1", "LC_ALL=C",
	}
	if !slices.Equal(got, want) {
		t.Errorf("environ =\n%q\nwant\n%q", got, want)
	}
}

// The variables a git hook or an editor leaves behind do not redirect a
// command that names its repository.
func TestRunIgnoresHostileEnvironment(t *testing.T) {
	base, other := repo(t), repo(t)
	ctx := t.Context()
	// Where the repository, its work tree, index and objects are.
	probe := func() string {
		t.Helper()
		var out []byte
		for _, args := range [][]string{
			{"rev-parse", "--absolute-git-dir", "--show-toplevel", "HEAD"},
			{"status", "--porcelain", "--untracked-files=no"},
			{"cat-file", "-p", "HEAD:a.txt"},
			{"config", "--default=unset", "--get", "airlock.test"},
		} {
			b, err := In(base).Run(ctx, args...)
			if err != nil {
				return err.Error()
			}
			out = append(out, b...)
		}
		return string(out)
	}
	want := probe()
	if !strings.Contains(want, base) || !strings.Contains(want, "unset") {
		t.Fatalf("probe of %s = %q", base, want)
	}
	for k, v := range map[string]string{
		"GIT_DIR":               filepath.Join(other, ".git"),
		"GIT_WORK_TREE":         other,
		"GIT_INDEX_FILE":        filepath.Join(t.TempDir(), "index"),
		"GIT_OBJECT_DIRECTORY":  filepath.Join(other, ".git", "objects"),
		"GIT_CONFIG_PARAMETERS": "'airlock.test'='leaked'",
		"GIT_CONFIG_COUNT":      "1",
	} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			t.Setenv("GIT_CONFIG_KEY_0", "airlock.test")
			t.Setenv("GIT_CONFIG_VALUE_0", "leaked")
			if got := probe(); got != want {
				t.Errorf("with %s=%s:\n%s\nwant\n%s", k, v, got, want)
			}
		})
	}
}

// Hooks are the user's code, also when the repository's own configuration
// points at them.
func TestRunRunsNoHooks(t *testing.T) {
	dir := repo(t)
	ran := filepath.Join(t.TempDir(), "ran")
	hooks := filepath.Join(dir, "myhooks")
	if err := os.Mkdir(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	hook := "#!/bin/sh\ntouch " + ran + "\n"
	if err := os.WriteFile(filepath.Join(hooks, "reference-transaction"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := In(dir).Run(ctx, "config", "core.hooksPath", hooks); err != nil {
		t.Fatal(err)
	}
	if _, err := In(dir).Run(ctx, "update-ref", "refs/heads/other", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("update-ref ran the repository's reference-transaction hook")
	}
}

// A failure names the command and the repository, and says what git said.
func TestErrorNamesCommandRepositoryAndMessage(t *testing.T) {
	testbin.Require(t, "git", "package git runs it")
	t.Setenv("LC_ALL", "de_DE.UTF-8")
	dir := filepath.Join(t.TempDir(), "not a repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := In(dir).Run(t.Context(), "rev-parse", "--verify", "HEAD")
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("err = %v (%T), want a *git.Error", err, err)
	}
	want := `git -C "` + dir + `" rev-parse --verify HEAD: fatal: not a git repository`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %q, want it to start %q", err, want)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Errorf("err = %v does not unwrap to git's exit status", err)
	}
}

func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Installed(t.Context()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Installed without git = %v, want ErrNotFound", err)
	}
	_, err := At("/repo").Run(t.Context(), "rev-parse", "HEAD")
	if !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "git --git-dir=/repo rev-parse HEAD: ") {
		t.Errorf("Run without git = %v, want exec.ErrNotFound naming the command", err)
	}
}

// git stops when its context ends, and Run returns soon after even when a
// child of git holds the output pipe open. The child would hold it for an
// hour: a Run still waiting a minute after the deadline waits for it, and
// no load makes a Run that does not wait take that long.
func TestRunStopsAtDeadline(t *testing.T) {
	testbin.Require(t, "sleep", "the fake git waits with it")
	pidFile := filepath.Join(t.TempDir(), "child")
	fakeGit(t, "sleep 3600 & echo $! > '"+pidFile+"'; wait\n")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := In(t.TempDir()).Run(ctx, "status")
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run still waits a minute after a 200ms deadline: it waits for the child holding git's output")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "status: stopped: context deadline exceeded") {
		t.Errorf("err = %v, want the command stopped at its deadline", err)
	}
}

func TestInstalledVersion(t *testing.T) {
	fakeGit(t, `[ "$*" = "-c core.hooksPath=/dev/null -c core.fsmonitor=false --version" ] && echo "git version 2.39.5" && exit 0
echo "unexpected: $*" >&2; exit 129
`)
	v, err := Installed(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if major, minor, ok := v.Number(); v.Text != "git version 2.39.5" || !filepath.IsAbs(v.Path) || major != 2 || minor != 39 || !ok {
		t.Errorf("Installed = %+v (%d.%d %v), want git version 2.39.5 at an absolute path", v, major, minor, ok)
	}
}

// A scratch index named by airlock is the one git uses, whatever index an
// inherited GIT_INDEX_FILE names, and the repository's own index is left
// as it was.
func TestWithIndexIsTheIndexUsed(t *testing.T) {
	dir := repo(t)
	ctx := t.Context()
	own, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_INDEX_FILE", filepath.Join(t.TempDir(), "inherited"))
	scratch := filepath.Join(t.TempDir(), "scratch.index")
	r := In(dir).WithIndex(scratch)
	if _, err := r.Run(ctx, "read-tree", "--empty"); err != nil {
		t.Fatal(err)
	}
	blob, err := r.RunInput(ctx, []byte("x\n"), "hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	info := "100644 " + strings.TrimSpace(string(blob)) + "\tonly.txt\x00"
	if _, err := r.RunInput(ctx, []byte(info), "update-index", "-z", "--index-info"); err != nil {
		t.Fatal(err)
	}
	tree, err := r.Run(ctx, "write-tree")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := In(dir).Run(ctx, "ls-tree", "--name-only", strings.TrimSpace(string(tree)))
	if err != nil {
		t.Fatal(err)
	}
	if string(ls) != "only.txt\n" {
		t.Errorf("the scratch index's tree holds %q, want only.txt", ls)
	}
	if _, err := os.Stat(os.Getenv("GIT_INDEX_FILE")); err == nil {
		t.Errorf("git wrote the inherited GIT_INDEX_FILE")
	}
	if now, _ := os.ReadFile(filepath.Join(dir, ".git", "index")); !bytes.Equal(now, own) {
		t.Errorf("the repository's own index changed")
	}
}
