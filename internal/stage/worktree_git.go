package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// minGit is the oldest git the worktree backend works with: `git worktree
// remove` came in 2.17.
var minGit = [2]int{2, 17}

// gitSupport reports whether git is installed and new enough for the
// worktree backend.
func gitSupport() (bool, string) {
	p, err := exec.LookPath("git")
	if err != nil {
		return false, "git is not on PATH; install git or use --backend copy"
	}
	out, err := exec.Command(p, "--version").Output()
	if err != nil {
		return false, fmt.Sprintf("%s --version failed: %v", p, err)
	}
	v := strings.TrimSpace(string(out))
	major, minor, ok := parseGitVersion(v)
	if !ok {
		return false, fmt.Sprintf("cannot read the version of %s from %q", p, v)
	}
	if major < minGit[0] || (major == minGit[0] && minor < minGit[1]) {
		return false, fmt.Sprintf("%s is %s; the worktree backend needs git %d.%d or newer", p, v, minGit[0], minGit[1])
	}
	return true, fmt.Sprintf("%s (%s): a git worktree of HEAD on branch airlock/<id>, made equal to the base's working tree", v, p)
}

// parseGitVersion reads "git version 2.39.5" (and vendor suffixes such as
// "2.39.3 (Apple Git-146)").
func parseGitVersion(s string) (major, minor int, ok bool) {
	f := strings.Fields(s)
	if len(f) < 3 || f[0] != "git" || f[1] != "version" {
		return 0, 0, false
	}
	parts := strings.SplitN(f[2], ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}

// gitEnvDrop are variables that would point git at another repository,
// index or work tree than the one airlock names on its command line (a hook
// or an editor that runs airlock may have set them).
var gitEnvDrop = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES",
	"GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_INDEX_VERSION",
}

func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(gitEnvDrop, k) {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_TERMINAL_PROMPT=0")
}

// git runs git with args (which name the repository: -C dir or
// --git-dir=dir) and returns its stdout. stdin, if not nil, is its input.
// A failure carries git's own message.
func git(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	// Hooks are the user's code: airlock's own bookkeeping never runs them.
	// An fsmonitor would start a daemon watching the staged tree.
	pre := []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}
	cmd := exec.CommandContext(ctx, "git", append(pre, args...)...)
	cmd.Env = gitEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			// Progress lines ("Preparing worktree ...") are not the error.
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
				if !strings.HasPrefix(l, "Preparing worktree") {
					lines = append(lines, l)
				}
			}
			msg := strings.Join(lines, "\n")
			if msg == "" {
				msg = ee.String()
			}
			return out, &gitError{args: args, msg: msg}
		}
		return out, fmt.Errorf("run git %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// gitError is git exiting non-zero.
type gitError struct {
	args []string
	msg  string
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), strings.ReplaceAll(e.msg, "\n", "; "))
}

// repo is where a base lies in its git repository.
type repo struct {
	dir    string // the base
	top    string // the work tree's top directory
	common string // the repository's common git directory (shared by all its worktrees)
	prefix string // the base relative to top, slash-separated with a trailing slash; "" at the top
	head   string // the commit HEAD names
}

// errNotRepo marks a base that is not in a git work tree.
var errNotRepo = errors.New("not in a git work tree")

// findRepo locates base's repository, or says why it has none that a
// worktree can be made of.
func findRepo(ctx context.Context, base string) (*repo, error) {
	out, err := git(ctx, nil, "-C", base, "rev-parse", "--is-inside-work-tree")
	var ge *gitError
	if errors.As(err, &ge) && !strings.Contains(ge.msg, "not a git repository") {
		// A repository git will not work in (dubious ownership, a
		// broken .git): say what git said.
		return nil, fmt.Errorf("base %s: --backend worktree cannot use its git repository: %w", quote(base), err)
	}
	if err != nil || strings.TrimSpace(string(out)) != "true" {
		return nil, fmt.Errorf("base %s is %w: --backend worktree needs a git repository; use --backend copy", quote(base), errNotRepo)
	}
	out, err = git(ctx, nil, "-C", base, "rev-parse", "--show-toplevel", "--git-common-dir", "--show-prefix")
	if err != nil {
		return nil, fmt.Errorf("locate the git repository of %s: %w", quote(base), err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 3 {
		return nil, fmt.Errorf("locate the git repository of %s: unexpected answer %q from git rev-parse", quote(base), out)
	}
	r := &repo{dir: base, top: lines[0], common: lines[1], prefix: lines[2]}
	if !filepath.IsAbs(r.common) {
		r.common = filepath.Join(base, r.common)
	}
	if c, err := filepath.EvalSymlinks(r.common); err == nil {
		r.common = c
	}
	out, err = git(ctx, nil, "-C", base, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("the git repository of %s has no commit yet: --backend worktree checks out HEAD; make a first commit or use --backend copy", quote(base))
	}
	r.head = strings.TrimSpace(string(out))
	return r, nil
}

// lockRepo serialises airlock's worktree creation and removal in one
// repository, across processes: git's own locks (index.lock, config.lock,
// the numbering of .git/worktrees/<name>) make concurrent `git worktree
// add`s fail rather than wait. The flock lives in the repository's common
// git directory, so that transactions with different state roots exclude
// each other too, and the kernel drops it when a holder dies.
func lockRepo(ctx context.Context, common string) (func(), error) {
	path := filepath.Join(common, "airlock-worktree.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the git repository %s for worktree changes: %w", quote(common), unwrapPath(err))
	}
	delay := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", quote(path), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: another airlock process holds it: %w", quote(path), context.Cause(ctx))
		case <-time.After(delay):
		}
		delay = min(delay*2, 50*time.Millisecond)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
			f.Close()
		})
	}, nil
}

// commitOf resolves a ref to a commit in the repository, "" when it does
// not exist.
func commitOf(ctx context.Context, common, ref string) string {
	out, err := git(ctx, nil, "--git-dir="+common, "rev-parse", "--verify", "-q", ref+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// containedElsewhere reports whether every commit reachable from sha is
// also reachable from some ref other than except (and from the HEAD of
// every worktree still registered): deleting except then loses nothing.
// except may be empty.
func containedElsewhere(ctx context.Context, common, sha, except string) (bool, error) {
	args := []string{"--git-dir=" + common, "rev-list", "-n1", sha, "--not"}
	if except != "" {
		args = append(args, "--exclude="+except)
	}
	out, err := git(ctx, nil, append(args, "--all")...)
	if err != nil {
		return false, err
	}
	return len(bytes.TrimSpace(out)) == 0, nil
}
