package keepcommits

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/manifest"
)

// Timeout bounds the git commands that read the staged
// repository.
const Timeout = time.Minute

// MaxBranches bounds the staged branches looked at: each costs a few
// git commands, under the transaction's lock.
const MaxBranches = 64

// Unsafe says why the staged repository is not read at all: the
// command left in it something git would follow out of it or block on — a
// FIFO, socket, device or symlink (git opens them as files), or a
// commondir or alternates file the base's repository does not have (git
// would read another repository's refs and objects as the staged one's).
// walked, when the settling walk measured the staged tree (.git in it)
// already, is that walk.
func Unsafe(ctx context.Context, baseGit, stagedGit string, walked *manifest.Manifest) string {
	entries, prefix := []manifest.Entry(nil), ".git/"
	if walked != nil {
		entries = walked.Entries
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
// MaxBranches of them, which a warning says).
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
	if len(branches) > MaxBranches {
		warnings = append(warnings, fmt.Sprintf("the staged repository has %d branches; only HEAD and the first %d were looked at for commits to keep", len(branches), MaxBranches))
		branches = branches[:MaxBranches]
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

// Kept is what Fetch kept: the branch it wrote ("" when none) and its
// head, and what it could not keep.
type Kept struct {
	Branch, Head string
	Warnings     []string
}

// Fetch fetches the staged repository's fresh tips into the base's
// repository as branch name (airlock/<id>): the first tip is the branch,
// the others' commits are said to go unless they are on it. Only objects
// and that one ref are written. Nothing fresh keeps nothing (nil, unless
// there is a warning to give).
func Fetch(ctx context.Context, baseGit, stagedGit, name string) (*Kept, error) {
	base := git.At(baseGit)
	fresh, warnings, err := freshTips(ctx, base, stagedGit)
	if err != nil {
		return nil, err
	}
	if len(fresh) == 0 {
		if len(warnings) > 0 {
			return &Kept{Warnings: warnings}, nil
		}
		return nil, nil
	}
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
	kept := &Kept{Branch: name, Head: strings.TrimSpace(string(h)), Warnings: warnings}
	for _, f := range fresh[1:] {
		if _, err := base.Run(ctx, "merge-base", "--is-ancestor", f.sha, ref); err == nil {
			continue
		}
		kept.Warnings = append(kept.Warnings, fmt.Sprintf("the staged repository's branch %s (at %s) holds commits that are not on %s; only one branch is kept, and those go with the staged workspace", strings.TrimPrefix(f.ref, "refs/heads/"), f.sha, name))
	}
	return kept, nil
}
