package airlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/stage"
)

// A copy, reflink or overlay transaction over the top of a git work tree
// stages a copy of its .git too, so that git works in the staged tree; but
// nothing under .git is ever applied, so the commits an agent makes there
// (Claude Code and aider commit by habit) would go with the staged tree.
// keepCommits keeps them as the worktree backend keeps its own: the
// commits the staged repository has and the base's does not are fetched
// into the base's repository as branch airlock/<id>. Only objects and that
// one ref are written: the base's HEAD, index, working tree and other refs
// are not touched.
//
// The staged repository is the agent's: it is only read, by git's own
// upload-pack (`git fetch` from a local path), the way git reads any
// repository it fetches from; no command runs inside it.

// keptCommits is what keepCommits did: the branch it wrote, and what it
// could not keep.
type keptCommits struct {
	branch   *Branch
	warnings []string
}

// keepCommits fetches the staged repository's new commits into the base's
// repository. It never fails the settle: what it cannot do is a warning.
// changed says the staged .git may have changed (the change set counts
// paths under .git, or could not be measured).
func (t *Tx) keepCommits(ctx context.Context, changed bool) *keptCommits {
	if t.rec.Backend == stage.Worktree || !changed {
		return nil
	}
	baseGit := filepath.Join(t.Base(), ".git")
	stagedGit := filepath.Join(t.Path(), ".git")
	for _, p := range []string{baseGit, stagedGit} {
		// A .git file (a linked worktree or a submodule of the base)
		// points to a repository both trees share; a symlink could point
		// anywhere. Only a repository of the base's own is kept into.
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return nil
		}
	}
	if why := t.stagedGitUnsafe(ctx, baseGit, stagedGit); why != "" {
		return &keptCommits{warnings: []string{fmt.Sprintf("the commits made in the staged repository %s were not kept in %s: %s; they go with the staged workspace", stagedGit, baseGit, why)}}
	}
	// git reads what the command left in the staged repository: bounded,
	// so that nothing there can hold the settle.
	ctx, cancel := context.WithTimeout(ctx, keepCommitsTimeout)
	defer cancel()
	kept, err := t.fetchCommits(ctx, baseGit, stagedGit)
	if err != nil {
		return &keptCommits{warnings: []string{fmt.Sprintf("the commits made in the staged repository %s could not be kept in %s (%v); they go with the staged workspace", stagedGit, baseGit, err)}}
	}
	return kept
}

// keepCommitsTimeout bounds the git commands that read the staged
// repository.
const keepCommitsTimeout = time.Minute

// maxKeptBranches bounds the staged branches looked at: each costs a few
// git commands, under the transaction's lock.
const maxKeptBranches = 64

// stagedGitUnsafe says why the staged repository is not read at all: the
// command left in it something git would follow out of it or block on — a
// FIFO, socket, device or symlink (git opens them as files), or a
// commondir or alternates file the base's repository does not have (git
// would read another repository's refs and objects as the staged one's).
// The settling walk measured the staged .git already.
func (t *Tx) stagedGitUnsafe(ctx context.Context, baseGit, stagedGit string) string {
	entries, prefix := []manifest.Entry(nil), ".git/"
	if t.walked != nil {
		entries = t.walked.Entries
	} else {
		// The backend did not walk the tree (overlay): walk its .git.
		m, err := manifest.Walk(ctx, stagedGit, manifest.WalkOptions{})
		if err != nil {
			return fmt.Sprintf("it cannot be measured (%v)", err)
		}
		entries, prefix = m.Entries, ""
	}
	for _, e := range entries {
		// Hooks are never run by airlock's git (core.hooksPath is
		// /dev/null), and people link theirs in.
		if !strings.HasPrefix(e.Path, prefix) || strings.HasPrefix(e.Path, prefix+"hooks/") {
			continue
		}
		if e.Kind == manifest.KindOther || e.Kind == manifest.KindSymlink {
			return fmt.Sprintf("it holds %s %s, which git would open as a file", e.Kind, path.Join(".git", strings.TrimPrefix(e.Path, ".git/")))
		}
	}
	for _, name := range []string{"commondir", "objects/info/alternates", "objects/info/http-alternates"} {
		staged, serr := os.ReadFile(filepath.Join(stagedGit, name))
		base, berr := os.ReadFile(filepath.Join(baseGit, name))
		if (serr == nil) != (berr == nil) || string(staged) != string(base) {
			if serr == nil || berr == nil {
				return fmt.Sprintf("its %s differs from the base repository's (it would make git read another repository)", name)
			}
		}
	}
	return ""
}

// stagedTip is a branch tip of the staged repository.
type stagedTip struct{ ref, sha string }

// freshTips lists the tips of the staged repository that hold commits the
// base's repository lacks: HEAD's first, then each branch's (at most
// maxKeptBranches of them, which a warning says).
func freshTips(ctx context.Context, base git.Repo, stagedGit string) ([]stagedTip, []string, error) {
	out, err := base.Run(ctx, "ls-remote", stagedGit)
	if err != nil {
		return nil, nil, err
	}
	var head *stagedTip
	var branches []stagedTip
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		sha, ref, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		switch {
		case ref == "HEAD":
			head = &stagedTip{ref, sha}
		case strings.HasPrefix(ref, "refs/heads/"):
			branches = append(branches, stagedTip{ref, sha})
		}
	}
	// A tip the base's refs already name holds nothing new: most settles
	// end here, with no commit made.
	known := map[string]bool{}
	refs, err := base.Run(ctx, "for-each-ref", "--format=%(objectname)")
	if err != nil {
		return nil, nil, err
	}
	for _, s := range strings.Fields(string(refs)) {
		known[s] = true
	}
	if h, err := base.Run(ctx, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		known[strings.TrimSpace(string(h))] = true
	}
	isNew := func(sha string) (bool, error) {
		if known[sha] {
			return false, nil
		}
		if _, err := base.Run(ctx, "cat-file", "-e", sha+"^{commit}"); err != nil {
			var ge *git.Error
			if errors.As(err, &ge) && ctx.Err() == nil {
				return true, nil // not in the base's repository at all
			}
			return false, err
		}
		rl, err := base.Run(ctx, "rev-list", "-n1", sha, "--not", "--all")
		return len(strings.TrimSpace(string(rl))) > 0, err
	}
	var warnings []string
	if len(branches) > maxKeptBranches {
		warnings = append(warnings, fmt.Sprintf("the staged repository has %d branches; only HEAD and the first %d were looked at for commits to keep", len(branches), maxKeptBranches))
		branches = branches[:maxKeptBranches]
	}
	var fresh []stagedTip
	if head != nil {
		n, err := isNew(head.sha)
		if err != nil {
			return nil, nil, err
		}
		if n {
			fresh = append(fresh, *head)
		}
	}
	for _, b := range branches {
		if head != nil && b.sha == head.sha {
			continue
		}
		n, err := isNew(b.sha)
		if err != nil {
			return nil, nil, err
		}
		if n && !slices.ContainsFunc(fresh, func(f stagedTip) bool { return f.sha == b.sha }) {
			fresh = append(fresh, b)
		}
	}
	return fresh, warnings, nil
}

// fetchCommits fetches the staged repository's fresh tips into the base's
// repository as branch airlock/<id>: the first tip is the branch, the
// others' commits are said to go unless they are on it.
func (t *Tx) fetchCommits(ctx context.Context, baseGit, stagedGit string) (*keptCommits, error) {
	base := git.At(baseGit)
	fresh, warnings, err := freshTips(ctx, base, stagedGit)
	if err != nil {
		return nil, err
	}
	if len(fresh) == 0 {
		if len(warnings) > 0 {
			return &keptCommits{warnings: warnings}, nil
		}
		return nil, nil
	}
	name := "airlock/" + t.ID()
	ref := "refs/heads/" + name
	if cur, err := base.Run(ctx, "rev-parse", "--verify", "-q", ref); err == nil {
		return nil, fmt.Errorf("branch %s already exists in the base's repository (at %s) and is left as it is", name, strings.TrimSpace(string(cur)))
	}
	// The chosen tip and the others' objects come in one fetch, so that
	// whether another branch's commits are on the kept one can be told in
	// the base's repository, without running git in the agent's.
	args := []string{
		// No gc or maintenance, no submodules, no tags: the fetch writes
		// objects and the one ref, nothing else.
		"-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "fetch.recurseSubmodules=false",
		"fetch", "--no-tags", "--quiet",
	}
	if v, err := git.Installed(ctx); err == nil {
		// Nor FETCH_HEAD, where git can be told (2.29 and later).
		if major, minor, ok := v.Number(); ok && (major > 2 || major == 2 && minor >= 29) {
			args = append(args, "--no-write-fetch-head")
		}
	}
	args = append(args, stagedGit, fresh[0].ref+":"+ref)
	for _, f := range fresh[1:] {
		args = append(args, f.ref)
	}
	if _, err := base.Run(ctx, args...); err != nil {
		return nil, err
	}
	h, err := base.Run(ctx, "rev-parse", "--verify", "-q", ref)
	if err != nil {
		return nil, err
	}
	kept := &keptCommits{branch: &Branch{Name: name, Head: strings.TrimSpace(string(h)), Kept: true}, warnings: warnings}
	for _, f := range fresh[1:] {
		if _, err := base.Run(ctx, "merge-base", "--is-ancestor", f.sha, ref); err == nil {
			continue
		}
		kept.warnings = append(kept.warnings, fmt.Sprintf("the staged repository's branch %s (at %s) holds commits that are not on %s; only one branch is kept, and those go with the staged workspace", strings.TrimPrefix(f.ref, "refs/heads/"), f.sha, name))
	}
	return kept, nil
}

// noteBranch sets the result's Branch where the settle itself did not: a
// worktree transaction's branch, once its worktree is gone and the branch
// kept, and the branch of a settle repeated.
func (t *Tx) noteBranch(ctx context.Context, res *Result) {
	if res.Branch != nil || res.Outcome == Refused {
		return
	}
	if b, err := t.Branch(ctx); err == nil && b != nil && b.Kept {
		res.Branch = b
	}
}

// settledBranch is the branch a settled copy, reflink or overlay
// transaction kept its staged repository's commits on, from its receipt;
// nil when it kept none.
func (t *Tx) settledBranch() (*Branch, error) {
	st, err := t.Status()
	if err != nil || !st.Settled() {
		return nil, err
	}
	rc, err := t.Receipt()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if rc.Branch == "" {
		return nil, nil
	}
	return &Branch{Name: rc.Branch, Head: rc.BranchHead, Kept: true}, nil
}
