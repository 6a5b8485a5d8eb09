package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/git"
)

// minGit is the oldest git the worktree backend works with: `git worktree
// remove` came in 2.17.
var minGit = [2]int{2, 17}

// gitSupport reports whether git is installed and new enough for the
// worktree backend.
func gitSupport() (bool, string) {
	v, err := git.Installed(context.Background())
	if errors.Is(err, git.ErrNotFound) {
		return false, "git is not on PATH; install git or use --backend copy"
	}
	if err != nil {
		return false, err.Error()
	}
	major, minor, ok := v.Number()
	if !ok {
		return false, fmt.Sprintf("cannot read the version of %s from %q", v.Path, v.Text)
	}
	if major < minGit[0] || (major == minGit[0] && minor < minGit[1]) {
		return false, fmt.Sprintf("%s is %s; the worktree backend needs git %d.%d or newer", v.Path, v.Text, minGit[0], minGit[1])
	}
	return true, fmt.Sprintf("%s (%s): a git worktree of HEAD on branch airlock/<id>, made equal to the base's working tree", v.Text, v.Path)
}

// repo is where a base lies in its git repository.
type repo struct {
	dir    string // the base
	top    string // the work tree's top directory
	common string // the repository's common git directory (shared by all its worktrees)
	prefix string // the base relative to top, slash-separated with a trailing slash; "" at the top
	head   string // the commit HEAD names
	index  string // the base's index file
}

// errNotRepo marks a base that is not in a git work tree.
var errNotRepo = errors.New("not in a git work tree")

// findRepo locates base's repository, or says why it has none that a
// worktree can be made of.
func findRepo(ctx context.Context, base string) (*repo, error) {
	out, err := git.In(base).Run(ctx, "rev-parse", "--is-inside-work-tree")
	var ge *git.Error
	var exit *exec.ExitError
	if errors.As(err, &ge) && errors.As(err, &exit) && !strings.Contains(ge.Stderr, "not a git repository") {
		// A repository git will not work in (dubious ownership, a
		// broken .git): say what git said.
		return nil, fmt.Errorf("base %s: --backend worktree cannot use its git repository: %w", quote(base), err)
	}
	if err != nil || strings.TrimSpace(string(out)) != "true" {
		return nil, fmt.Errorf("base %s is %w: --backend worktree needs a git repository; use --backend copy", quote(base), errNotRepo)
	}
	out, err = git.In(base).Run(ctx, "rev-parse", "--show-toplevel", "--git-common-dir", "--show-prefix", "--git-path", "index")
	if err != nil {
		return nil, fmt.Errorf("locate the git repository of %s: %w", quote(base), err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 4 {
		return nil, fmt.Errorf("locate the git repository of %s: unexpected answer %q from git rev-parse", quote(base), out)
	}
	r := &repo{dir: base, top: lines[0], common: lines[1], prefix: lines[2], index: lines[3]}
	if !filepath.IsAbs(r.common) {
		r.common = filepath.Join(base, r.common)
	}
	if !filepath.IsAbs(r.index) {
		r.index = filepath.Join(base, r.index)
	}
	if c, err := filepath.EvalSymlinks(r.common); err == nil {
		r.common = c
	}
	out, err = git.In(base).Run(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}")
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
	out, err := git.At(common).Run(ctx, "rev-parse", "--verify", "-q", ref+"^{commit}")
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
	args := []string{"rev-list", "-n1", sha, "--not"}
	if except != "" {
		args = append(args, "--exclude="+except)
	}
	out, err := git.At(common).Run(ctx, append(args, "--all")...)
	if err != nil {
		return false, err
	}
	return len(bytes.TrimSpace(out)) == 0, nil
}
