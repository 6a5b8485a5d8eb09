package stage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// worktreeBackend stages a git worktree of the base's HEAD, on a new branch
// airlock/<id>, made equal to the base's working tree: every file of the
// surface is copied (or cloned where the file system can), tracked or not,
// modified, untracked or ignored, and the worktree's index is made the
// base's index, so that `git status` in the staged tree reads as it does in
// the base. Commits the command makes there land on the branch, which
// outlives the transaction when it holds commits no other ref contains.
//
// Layout, for a staged workspace dir (<state>/tx/<id>/staged):
//
//   - base at the repository's top: dir is the worktree's top; its .git is
//     the worktree's gitfile, not a copy of the base's .git.
//   - base in a subdirectory P of the repository: the worktree's top is
//     dir.worktree, its P is the staged copy of the base, and dir is a
//     symlink to it. Tracked paths outside P are marked skip-worktree: they
//     are not checked out, and git treats them as unchanged.
//   - dir.worktree.json records the repository, the branch and the commit
//     it was made at, written before the worktree exists, so that gc can
//     find and remove a worktree whose opening process died.
//   - dir.filling is where the surface is copied while git makes the
//     worktree (addAndCopy); it is renamed into the worktree once both are
//     done.
//
// The id in the branch name is the name of dir's parent directory, the
// transaction's state directory.
type worktreeBackend struct{}

func (worktreeBackend) Name() string { return Worktree }

func (worktreeBackend) Supported(string) (bool, string) { return gitSupport() }

// worktreeRecord is what the backend keeps beside a staged workspace.
type worktreeRecord struct {
	// PID is the process that made the worktree: while it lives and has
	// not finished opening, gc leaves the worktree alone.
	PID    int    `json:"pid"`
	Base   string `json:"base"`
	Repo   string `json:"repo"`   // the repository's common git directory
	Top    string `json:"top"`    // the worktree's top directory, as registered
	Prefix string `json:"prefix"` // the base's path in the repository, "" or "dir/"
	Branch string `json:"branch"` // airlock/<id>
	Start  string `json:"start"`  // the commit the branch was made at: HEAD at open
	// Entries is how many paths were staged: a large tree is deleted in
	// the background when the worktree is removed.
	Entries int  `json:"entries"`
	Ready   bool `json:"ready"` // staging finished
	// Set when the worktree was removed.
	Removed bool   `json:"removed,omitempty"`
	Head    string `json:"head,omitempty"` // the branch's commit then, "" if the branch was gone
	Kept    bool   `json:"kept,omitempty"` // the branch was kept: it holds commits no other ref contains
	// Detached names the branch made for commits on a detached HEAD that
	// no ref held, when the worktree was removed.
	Detached string `json:"detached,omitempty"`
}

func recordPath(dir string) string { return dir + ".worktree.json" }

// resolveParent resolves the symlinks in dir's parent, as Stage does
// before it records paths, so that a path given with them names the same
// record and worktree.
func resolveParent(dir string) string {
	dir = filepath.Clean(dir)
	if p, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil {
		return filepath.Join(p, filepath.Base(dir))
	}
	return dir
}

func readRecord(dir string) (*worktreeRecord, error) {
	b, err := os.ReadFile(recordPath(dir))
	if err != nil {
		return nil, err
	}
	var r worktreeRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("corrupt worktree record %s: %w", quote(recordPath(dir)), err)
	}
	if r.Repo == "" || r.Top == "" || !filepath.IsAbs(r.Repo) || !filepath.IsAbs(r.Top) {
		return nil, fmt.Errorf("corrupt worktree record %s: no repository or worktree path", quote(recordPath(dir)))
	}
	return &r, nil
}

func writeRecord(dir string, r *worktreeRecord) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return safefs.WriteFile(recordPath(dir), append(b, '\n'), 0o600)
}

func (worktreeBackend) Stage(ctx context.Context, req Request) (res *Result, err error) {
	pl, err := placeWorktree(ctx, req)
	if err != nil {
		return nil, err
	}
	base, r, parent, dir := pl.base, pl.repo, pl.parent, pl.dir
	branch := "airlock/" + filepath.Base(parent)
	if _, err := git.Run(ctx, "check-ref-format", "--branch", branch); err != nil {
		return nil, fmt.Errorf("transaction id %s cannot name the git branch %s (git's rules for branch names); choose another id or another backend", quote(filepath.Base(parent)), quote(branch))
	}
	rec := &worktreeRecord{PID: os.Getpid(), Base: base, Repo: r.common, Top: dir, Prefix: r.prefix, Branch: branch, Start: r.head}
	counterpart := dir
	if r.prefix != "" {
		rec.Top = dir + ".worktree"
		counterpart = filepath.Join(rec.Top, filepath.FromSlash(strings.TrimSuffix(r.prefix, "/")))
	}
	// The record first, so that a crash from here on leaves what gc needs
	// to remove the worktree and its branch.
	if err := writeRecord(dir, rec); err != nil {
		return nil, err
	}
	added := false
	defer func() {
		if err != nil {
			if uerr := undoWorktree(context.WithoutCancel(ctx), dir, rec, added); uerr != nil {
				err = fmt.Errorf("%w (and removing the partial worktree failed: %v)", err, uerr)
			}
		}
	}()
	res, added, err = addAndCopy(ctx, req, pl, rec)
	if err != nil {
		return nil, err
	}
	fault.Point("worktree-created")
	if err := fillWorktree(ctx, req, pl, rec, counterpart, res); err != nil {
		return nil, err
	}
	if counterpart != dir {
		rel, err := filepath.Rel(parent, counterpart)
		if err != nil {
			return nil, err
		}
		if err := os.Symlink(rel, dir); err != nil {
			return nil, fmt.Errorf("create staged workspace %s: %w", quote(dir), unwrapPath(err))
		}
	}
	// The gitfile was moved in after the copy: its digest, if it needs one.
	if err := digestRacy(ctx, res, counterpart, req); err != nil {
		return nil, stopped(ctx, base, err)
	}
	rec.Entries, rec.Ready = len(res.Base.Entries), true
	if err := writeRecord(dir, rec); err != nil {
		return nil, err
	}
	return res, nil
}

// worktreePlace is where a worktree's staged workspace goes: dir, in
// parent (resolved), for the base in repository repo.
type worktreePlace struct {
	base, parent, dir string
	repo              *repo
}

// placeWorktree finds the base's repository and the place of the staged
// workspace, which must not exist yet nor lie inside the base.
func placeWorktree(ctx context.Context, req Request) (worktreePlace, error) {
	var pl worktreePlace
	if !filepath.IsAbs(req.Base) || !filepath.IsAbs(req.Dir) {
		return pl, fmt.Errorf("stage %s into %s: both paths must be absolute", quote(req.Base), quote(req.Dir))
	}
	pl.base = filepath.Clean(req.Base)
	r, err := findRepo(ctx, pl.base)
	if err != nil {
		return pl, err
	}
	pl.repo = r
	// git records the worktree by its resolved path; so does airlock, so
	// that gc can match the two.
	if pl.parent, err = filepath.EvalSymlinks(filepath.Dir(filepath.Clean(req.Dir))); err != nil {
		return pl, fmt.Errorf("staged workspace %s: %w", quote(req.Dir), unwrapPath(err))
	}
	pl.dir = filepath.Join(pl.parent, filepath.Base(req.Dir))
	if pl.dir == pl.base || strings.HasPrefix(pl.dir, pl.base+string(filepath.Separator)) {
		return pl, fmt.Errorf("cannot stage %s into %s: the staged workspace would lie inside the base", quote(pl.base), quote(pl.dir))
	}
	if _, err := os.Lstat(pl.dir); err == nil {
		return pl, fmt.Errorf("staged workspace %s already exists; choose another transaction id or remove it", quote(pl.dir))
	}
	return pl, nil
}

// filling is where the base's surface is copied while git makes the
// worktree, beside the staged workspace dir.
func filling(dir string) string { return dir + ".filling" }

// addAndCopy registers the worktree (addWorktree) and, at the same time,
// copies (or clones) the base's surface into filling(dir), exactly as the
// copy backend stages. The two touch nothing in common: the copy leaves
// the base's .git out, and `git worktree add --no-checkout` writes only
// beneath the repository's git directory and the worktree's top, where it
// puts nothing but the gitfile; so the worktree costs its copy and not
// also the wait for git. A failed registration stops the copy, and its
// error is the one returned; added says whether the worktree exists.
func addAndCopy(ctx context.Context, req Request, pl worktreePlace, rec *worktreeRecord) (res *Result, added bool, err error) {
	copyCtx, stopCopy := context.WithCancelCause(ctx)
	defer stopCopy(nil)
	addErr := make(chan error, 1)
	go func() {
		err := addWorktree(ctx, rec)
		if err != nil {
			stopCopy(err)
		}
		addErr <- err
	}()
	skip := req.Skip
	if pl.repo.prefix == "" {
		// The base's .git is the repository itself; the worktree has its
		// own gitfile instead.
		skip = func(rel string, isDir bool) bool {
			return rel == ".git" || (req.Skip != nil && req.Skip(rel, isDir))
		}
	}
	clone := false
	if ok, _ := cloneSupport(pl.parent); ok && sameDevice(pl.parent, pl.base) {
		clone = true
	}
	res, cerr := stageCopy(copyCtx, Request{Base: pl.base, Dir: filling(pl.dir), Skip: skip, Progress: req.Progress, StateClock: req.StateClock, BaseClock: req.BaseClock}, clone)
	if aerr := <-addErr; aerr != nil {
		return nil, false, aerr
	}
	if cerr != nil {
		return nil, true, cerr
	}
	return res, true, nil
}

// fillWorktree moves the copied surface into the worktree at counterpart
// and gives it the base's index. At the repository's top, the worktree's
// gitfile (all that --no-checkout put there) moves into the copy, which
// then replaces the empty top in one rename.
func fillWorktree(ctx context.Context, req Request, pl worktreePlace, rec *worktreeRecord, counterpart string, res *Result) error {
	r, fill := pl.repo, filling(pl.dir)
	var err error
	if r.prefix == "" {
		if err = os.Rename(filepath.Join(rec.Top, ".git"), filepath.Join(fill, ".git")); err == nil {
			// rename(2) replaces an empty directory; os.Rename refuses to.
			if err = unix.Rename(fill, rec.Top); err != nil {
				err = &os.LinkError{Op: "rename", Old: fill, New: rec.Top, Err: err}
			}
		}
	} else if err = os.MkdirAll(filepath.Dir(counterpart), 0o700); err == nil {
		err = os.Rename(fill, counterpart)
	}
	if err != nil {
		return fmt.Errorf("set up worktree %s: %w", quote(rec.Top), unwrapPath(err))
	}
	if r.prefix == "" && (req.Skip == nil || !req.Skip(".git", true)) {
		if err := addGitEntries(res, pl.base, rec.Top); err != nil {
			return err
		}
	}
	return setIndex(ctx, r, rec.Top, res, req)
}

// addWorktree registers the worktree and makes its branch, under the
// repository's lock.
func addWorktree(ctx context.Context, rec *worktreeRecord) error {
	unlock, err := lockRepo(ctx, rec.Repo)
	if err != nil {
		return err
	}
	defer unlock()
	if commitOf(ctx, rec.Repo, "refs/heads/"+rec.Branch) != "" {
		return fmt.Errorf("git branch %s already exists in %s (kept from an earlier transaction with this id?); delete it with `git branch -D %s` or choose another id", rec.Branch, quote(rec.Repo), rec.Branch)
	}
	if _, err := git.At(rec.Repo).Run(ctx, "worktree", "add", "--no-checkout", "-b", rec.Branch, "--", rec.Top, rec.Start); err != nil {
		// git may have made the branch before it failed; it was not there
		// before, so it is this call's to take back.
		if unregister(ctx, rec.Repo, rec.Top) == nil && commitOf(ctx, rec.Repo, "refs/heads/"+rec.Branch) == rec.Start {
			git.At(rec.Repo).Run(ctx, "update-ref", "-d", "refs/heads/"+rec.Branch, rec.Start)
		}
		return fmt.Errorf("create git worktree %s: %w", quote(rec.Top), err)
	}
	return nil
}

// addGitEntries puts the .git entries in the manifests: the base's
// repository directory as the base's, the worktree's gitfile as the
// staged one's. Both must be there for a diff to see .git as untouched;
// paths beneath .git are never part of a change set.
func addGitEntries(res *Result, base, top string) error {
	b, err := manifest.Lstat(filepath.Join(base, ".git"))
	if err != nil {
		return fmt.Errorf("measure %s: %w", quote(filepath.Join(base, ".git")), unwrapPath(err))
	}
	s, err := manifest.Lstat(filepath.Join(top, ".git"))
	if err != nil {
		return fmt.Errorf("measure %s: %w", quote(filepath.Join(top, ".git")), unwrapPath(err))
	}
	b.Path, s.Path = ".git", ".git"
	res.Base.Entries = append(res.Base.Entries, b)
	res.Base.Sort()
	res.Staged.Entries = append(res.Staged.Entries, s)
	res.Staged.Sort()
	return nil
}

// setIndex makes the worktree's index the base's for the base's paths:
// the same entries, stages and blobs (so staged, unstaged and conflicted
// paths read as they do in the base), then refreshes its stat data from
// the staged files. At the repository's top the index is written whole,
// with the stat data of every staged file the base's index proves clean
// (worktree_index.go), so that the refresh hashes only the rest. Tracked
// paths outside a subdirectory base are HEAD's and marked skip-worktree,
// as a sparse checkout would. Not carried: intent-to-add, assume-unchanged
// and skip-worktree marks of the base's own entries.
func setIndex(ctx context.Context, r *repo, top string, res *Result, req Request) error {
	if r.prefix == "" {
		list, written, err := readBaseIndex(ctx, r)
		switch {
		case err == nil:
			carryStat(list, res, top, written, req)
			path, err := worktreeIndexPath(top)
			if err != nil {
				return err
			}
			if err := writeIndex(path, list, len(r.head)/2); err != nil {
				return err
			}
			return refreshIndex(ctx, top)
		case !errors.Is(err, errIndexDebug):
			return err
		}
	}
	var info bytes.Buffer
	if r.prefix != "" {
		if err := readTreeOutside(ctx, r, top, &info); err != nil {
			return err
		}
	}
	out, err := git.In(r.dir).Run(ctx, "ls-files", "-s", "-z", "--full-name")
	if err != nil {
		return fmt.Errorf("read the git index of %s: %w", quote(r.dir), err)
	}
	info.Write(out)
	if info.Len() > 0 {
		if _, err := git.In(top).RunInput(ctx, info.Bytes(), "update-index", "-z", "--index-info"); err != nil {
			return fmt.Errorf("set up the index of worktree %s: %w", quote(top), err)
		}
	}
	return refreshIndex(ctx, top)
}

// readTreeOutside gives the index of a worktree whose base is a
// subdirectory HEAD's entries, the base's paths dropped (info gets an
// --index-info line removing each) and every other path marked
// skip-worktree.
func readTreeOutside(ctx context.Context, r *repo, top string, info *bytes.Buffer) error {
	if _, err := git.In(top).Run(ctx, "read-tree", r.head); err != nil {
		return fmt.Errorf("set up the index of worktree %s: %w", quote(top), err)
	}
	out, err := git.In(top).Run(ctx, "ls-files", "-z")
	if err != nil {
		return fmt.Errorf("set up the index of worktree %s: %w", quote(top), err)
	}
	var outside bytes.Buffer
	zero := strings.Repeat("0", len(r.head))
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) == 0 {
			continue
		}
		if strings.HasPrefix(string(p), r.prefix) {
			fmt.Fprintf(info, "0 %s\t%s\x00", zero, p)
		} else {
			outside.Write(p)
			outside.WriteByte(0)
		}
	}
	if outside.Len() > 0 {
		if _, err := git.In(top).RunInput(ctx, outside.Bytes(), "update-index", "--skip-worktree", "-z", "--stdin"); err != nil {
			return fmt.Errorf("set up the index of worktree %s: %w", quote(top), err)
		}
	}
	return nil
}

// refreshIndex refreshes the stat data of the worktree's index entries
// that have none from the staged files. -q: paths that differ from the
// index stay unrefreshed, as they should.
func refreshIndex(ctx context.Context, top string) error {
	if _, err := git.In(top).Run(ctx, "update-index", "-q", "--refresh"); err != nil {
		return fmt.Errorf("refresh the index of worktree %s: %w", quote(top), err)
	}
	return nil
}

// undoWorktree removes what a failed Stage made: the worktree, its branch
// (which holds nothing new yet), the staged tree and the record. Before
// the worktree was added, a branch of that name is someone else's.
func undoWorktree(ctx context.Context, dir string, rec *worktreeRecord, added bool) error {
	var errs []error
	if added {
		if err := removeWorktree(ctx, dir, rec); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeTree(ctx, filling(dir)); err != nil {
		errs = append(errs, err)
	}
	if err := os.Remove(recordPath(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Remove unregisters the worktree, deletes its tree, and deletes its
// branch when nothing would be lost: when the branch holds no commit that
// no other ref (or other worktree's HEAD) contains. Otherwise the branch is
// kept, and so recorded (see WorktreeBranch). Commits on a detached HEAD
// that no ref holds are kept on a branch too. A dir without a worktree
// record is removed as a plain tree.
func (worktreeBackend) Remove(ctx context.Context, dir string) error {
	dir = resolveParent(dir)
	rec, err := readRecord(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return removeTree(ctx, dir)
	}
	if err != nil {
		return err
	}
	if rec.Removed {
		return nil
	}
	return removeWorktree(ctx, dir, rec)
}

// removeWorktree does Remove's work and records the outcome in the record
// (when it still exists).
func removeWorktree(ctx context.Context, dir string, rec *worktreeRecord) error {
	unlock, err := lockRepo(ctx, rec.Repo)
	if err != nil {
		if _, serr := os.Stat(rec.Repo); errors.Is(serr, fs.ErrNotExist) {
			// The repository is gone, and its registrations with it.
			unlock = func() {}
		} else {
			return err
		}
	}
	defer unlock()
	if cur, err := readRecord(dir); err == nil && cur.Removed {
		return nil // removed meanwhile (a settle and a gc at once)
	}
	ref := "refs/heads/" + rec.Branch
	// Work committed on a detached HEAD is reachable from nothing once the
	// worktree (and its HEAD) is gone: give it a branch first.
	if err := keepDetached(ctx, rec, ref); err != nil {
		return err
	}
	// Moved aside first: git then only unregisters the worktree, and the
	// tree is deleted like any staged workspace.
	aside := ""
	if _, err := os.Lstat(rec.Top); err == nil {
		aside = rec.Top + ".removing"
		if err := removeTree(ctx, aside); err != nil {
			return err
		}
		if err := os.Rename(rec.Top, aside); err != nil {
			return fmt.Errorf("remove worktree %s: %w", quote(rec.Top), unwrapPath(err))
		}
	}
	if err := unregister(ctx, rec.Repo, rec.Top); err != nil {
		return err
	}
	head := commitOf(ctx, rec.Repo, ref)
	kept := false
	if head != "" {
		ok := head == rec.Start
		if !ok {
			if ok, err = containedElsewhere(ctx, rec.Repo, head, ref); err != nil {
				return fmt.Errorf("decide whether branch %s can be deleted: %w", rec.Branch, err)
			}
		}
		if ok {
			if _, err := git.At(rec.Repo).Run(ctx, "update-ref", "-d", ref, head); err != nil {
				return fmt.Errorf("delete branch %s: %w", rec.Branch, err)
			}
		} else {
			kept = true
		}
	}
	unlock()
	if dir != rec.Top {
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove staged workspace %s: %w", quote(dir), unwrapPath(err))
		}
	}
	if aside != "" {
		if rec.Entries > backgroundEntries && removeDetached(aside) == nil {
			// Deleting a large tree takes seconds; nothing refers to it.
		} else if err := removeTree(ctx, aside); err != nil {
			return err
		}
	}
	os.Remove(dir + ".gitfile")
	rec.Removed, rec.Head, rec.Kept = true, head, kept
	if _, err := os.Stat(recordPath(dir)); err == nil {
		if err := writeRecord(dir, rec); err != nil {
			return err
		}
	}
	return nil
}

// backgroundEntries is the size of a staged tree (in paths) above which
// its deletion is left to a detached process.
const backgroundEntries = 3000

// keepDetached makes sure commits on a detached HEAD of the worktree are
// held by a branch before the worktree goes: the transaction's branch when
// it holds nothing of its own beyond what the HEAD holds, else a branch
// named after it with "-detached".
func keepDetached(ctx context.Context, rec *worktreeRecord, ref string) error {
	if _, err := os.Lstat(filepath.Join(rec.Top, ".git")); err != nil {
		return nil
	}
	if _, err := git.In(rec.Top).Run(ctx, "symbolic-ref", "-q", "HEAD"); err == nil {
		return nil // on a branch: branches are refs
	}
	out, err := git.In(rec.Top).Run(ctx, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return nil
	}
	detached := strings.TrimSpace(string(out))
	if detached == rec.Start {
		return nil
	}
	// --single-worktree: this worktree's own HEAD must not count.
	rl, err := git.At(rec.Repo).Run(ctx, "rev-list", "-n1", detached, "--not", "--single-worktree", "--all")
	if err != nil {
		return fmt.Errorf("check the detached HEAD of worktree %s: %w", quote(rec.Top), err)
	}
	if len(bytes.TrimSpace(rl)) == 0 {
		return nil
	}
	head := commitOf(ctx, rec.Repo, ref)
	if head == "" || head == rec.Start || isAncestor(ctx, rec.Repo, head, detached) {
		if _, err := git.At(rec.Repo).Run(ctx, "update-ref", ref, detached); err != nil {
			return fmt.Errorf("keep the detached HEAD of worktree %s on branch %s: %w", quote(rec.Top), rec.Branch, err)
		}
		return nil
	}
	name := rec.Branch + "-detached"
	if _, err := git.At(rec.Repo).Run(ctx, "update-ref", "refs/heads/"+name, detached, ""); err != nil {
		return fmt.Errorf("keep the detached HEAD of worktree %s on branch %s: %w", quote(rec.Top), name, err)
	}
	rec.Detached = name
	return nil
}

func isAncestor(ctx context.Context, common, a, b string) bool {
	_, err := git.At(common).Run(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// unregister removes the repository's registration of the worktree at
// top, whose tree is already gone. A worktree that was never registered
// (a crash before git made it) is not an error.
func unregister(ctx context.Context, common, top string) error {
	if _, err := os.Stat(common); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_, err := git.At(common).Run(ctx, "worktree", "remove", "--force", "--force", "--", top)
	if err == nil {
		return nil
	}
	wts, lerr := listWorktrees(ctx, common)
	if lerr != nil {
		return fmt.Errorf("unregister git worktree %s: %w", quote(top), err)
	}
	for _, w := range wts {
		if w.path == top {
			return fmt.Errorf("unregister git worktree %s: %w", quote(top), err)
		}
	}
	return nil
}

// worktreeEntry is one worktree `git worktree list` names.
type worktreeEntry struct {
	path   string
	branch string // the short branch name, "" when detached
}

func listWorktrees(ctx context.Context, common string) ([]worktreeEntry, error) {
	out, err := git.At(common).Run(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var list []worktreeEntry
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "worktree "):
			list = append(list, worktreeEntry{path: strings.TrimPrefix(line, "worktree ")})
		case strings.HasPrefix(line, "branch refs/heads/") && len(list) > 0:
			list[len(list)-1].branch = strings.TrimPrefix(line, "branch refs/heads/")
		}
	}
	return list, nil
}

// Branch is the git branch of a worktree transaction.
type Branch struct {
	Name string // airlock/<id>
	// Head is the commit the branch names now, or named when its worktree
	// was removed; "" when the branch is gone.
	Head  string
	Start string // the commit it was made at: the base's HEAD at open
	// Removed: the worktree is gone. Kept then says whether the branch
	// was kept because it holds commits no other ref contains (else it was
	// deleted).
	Removed bool
	Kept    bool
	// Detached names the extra branch that keeps commits made on a
	// detached HEAD, if one was needed.
	Detached string
}

// WorktreeBranch reports the branch of the staged workspace dir that the
// worktree backend made; nil when dir is not one.
func WorktreeBranch(ctx context.Context, dir string) (*Branch, error) {
	rec, err := readRecord(resolveParent(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	b := &Branch{Name: rec.Branch, Start: rec.Start, Removed: rec.Removed, Kept: rec.Kept, Head: rec.Head, Detached: rec.Detached}
	if !rec.Removed {
		b.Head = commitOf(ctx, rec.Repo, "refs/heads/"+rec.Branch)
	}
	return b, nil
}
