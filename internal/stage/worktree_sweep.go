package stage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// SweepOptions say where SweepWorktrees looks for worktrees that no
// transaction owns any more.
type SweepOptions struct {
	// Under is airlock's state root: only worktrees registered beneath it
	// are airlock's, and only they are touched.
	Under string
	// Bases are directories whose git repositories are searched: the
	// bases of the transactions the caller knows.
	Bases []string
	// Staged are staged workspace paths of transactions that never
	// finished opening: their worktree records name repositories too.
	Staged []string
	// Owned reports whether a transaction still owns the worktree at rel
	// (its path relative to Under, slash-separated); an owned worktree is
	// left alone.
	Owned func(rel string) bool
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
}

// Swept is one worktree SweepWorktrees removed (or, in a dry run, would).
type Swept struct {
	Path string // the worktree's top directory
	Rel  string // Path relative to Under, slash-separated
	Repo string // the repository's common git directory
	// Branch is what became of the worktree's branch (nil in a dry run,
	// or when it had none).
	Branch *Branch
}

// SweepWorktrees finds git worktrees registered beneath o.Under whose
// transaction is gone, or never finished opening (a crash between
// `git worktree add` and the open record), or has settled; it removes each
// one as Remove does: the registration and the tree, and the branch only
// when nothing would be lost. Afterwards `git worktree list` in those
// repositories names no airlock worktree that no transaction owns.
func SweepWorktrees(ctx context.Context, o SweepOptions) ([]Swept, error) {
	under := filepath.Clean(o.Under)
	if u, err := filepath.EvalSymlinks(under); err == nil {
		under = u
	}
	repos := map[string]bool{}
	records := map[string]string{} // worktree top → staged dir whose record names it
	for _, staged := range o.Staged {
		staged = resolveParent(staged)
		rec, err := readRecord(staged)
		if err != nil {
			continue
		}
		repos[rec.Repo] = true
		records[rec.Top] = staged
	}
	for _, b := range o.Bases {
		r, err := findRepo(ctx, b)
		if err != nil {
			if errors.Is(err, errNotRepo) {
				continue
			}
			// No commit, git missing: nothing airlock made is there.
			continue
		}
		repos[r.common] = true
	}
	var out []Swept
	var errs []error
	done := map[string]bool{}
	for _, common := range sortedKeys(repos) {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if _, err := os.Stat(common); err != nil {
			continue
		}
		wts, err := listWorktrees(ctx, common)
		if err != nil {
			errs = append(errs, fmt.Errorf("list the worktrees of %s: %w", quote(common), err))
			continue
		}
		for _, w := range wts {
			rel, ok := beneath(under, w.path)
			if !ok || done[w.path] || (o.Owned != nil && o.Owned(rel)) {
				continue
			}
			done[w.path] = true
			staged, rec := recordFor(w.path, records)
			if rec == nil {
				// No record (its state was removed): what git knows is
				// enough to remove it.
				rec = &worktreeRecord{Repo: common, Top: w.path}
				if strings.HasPrefix(w.branch, "airlock/") {
					rec.Branch = w.branch
				}
				staged = w.path
			}
			s, err := sweepOne(ctx, staged, rec, rel, o.DryRun)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, s)
		}
	}
	// A record whose worktree git never registered (a crash inside `git
	// worktree add`) may still have left its branch.
	for top, staged := range records {
		rel, ok := beneath(under, top)
		if !ok || done[top] || (o.Owned != nil && o.Owned(rel)) {
			continue
		}
		rec, err := readRecord(staged)
		if err != nil || rec.Removed {
			continue
		}
		s, err := sweepOne(ctx, staged, rec, rel, o.DryRun)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

func sweepOne(ctx context.Context, staged string, rec *worktreeRecord, rel string, dryRun bool) (Swept, error) {
	s := Swept{Path: rec.Top, Rel: rel, Repo: rec.Repo}
	if dryRun {
		return s, nil
	}
	if err := removeWorktree(ctx, staged, rec); err != nil {
		return s, fmt.Errorf("remove stale git worktree %s: %w", quote(rec.Top), err)
	}
	if rec.Branch != "" {
		s.Branch = &Branch{Name: rec.Branch, Head: rec.Head, Start: rec.Start, Removed: true, Kept: rec.Kept, Detached: rec.Detached}
	}
	return s, nil
}

// recordFor finds the record of the worktree at top: the staged dir is the
// top itself, or, for a base in a subdirectory, the top without its
// ".worktree" suffix.
func recordFor(top string, known map[string]string) (string, *worktreeRecord) {
	cands := []string{top}
	if s, ok := known[top]; ok {
		cands = []string{s}
	} else if t, ok := strings.CutSuffix(top, ".worktree"); ok {
		cands = append(cands, t)
	}
	for _, c := range cands {
		if rec, err := readRecord(c); err == nil && rec.Top == top {
			return c, rec
		}
	}
	return "", nil
}

// OpenInProgress reports whether the staged workspace dir is a worktree
// whose opening process is still alive: a transaction without an open
// record may simply not have written it yet.
func OpenInProgress(dir string) bool {
	rec, err := readRecord(resolveParent(dir))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) // unreadable: leave it be
	}
	return !rec.Removed && processAlive(rec.PID)
}

// HasWorktreeRecord reports whether dir is (or was meant to be) a staged
// workspace of the worktree backend.
func HasWorktreeRecord(dir string) bool {
	_, err := os.Lstat(recordPath(resolveParent(dir)))
	return err == nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// beneath reports whether p lies strictly inside dir, and its path there.
func beneath(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
