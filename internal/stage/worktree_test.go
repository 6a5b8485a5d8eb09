package stage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/testbin"
)

// needGit skips a test without git, and gives every git the test and the
// backend run a fixed identity and no user or system configuration.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testbin.Missing(t, "git is not installed: the worktree backend runs it")
	}
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Airlock Test", "GIT_AUTHOR_EMAIL": "test@airlock.invalid",
		"GIT_COMMITTER_NAME": "Airlock Test", "GIT_COMMITTER_EMAIL": "test@airlock.invalid",
	} {
		t.Setenv(k, v)
	}
}

// run runs git in dir and returns its stdout.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return string(out)
}

func write(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(content), mode))
	must(t, os.Chmod(p, mode))
}

// dirtyRepo makes a repository whose working tree differs from HEAD every
// way a working tree can: modified, deleted, staged (in the index only),
// untracked and ignored files, a mode change, symlinks and an empty
// directory, at the top and in sub/.
func dirtyRepo(t *testing.T) string {
	t.Helper()
	repo, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	run(t, repo, "init", "-q", "-b", "main")
	write(t, filepath.Join(repo, "a.txt"), "a\n", 0o644)
	write(t, filepath.Join(repo, "b.txt"), "b\n", 0o644)
	write(t, filepath.Join(repo, "run.sh"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(repo, "sub", "c.txt"), "c\n", 0o644)
	write(t, filepath.Join(repo, "sub", "d.txt"), "d\n", 0o644)
	write(t, filepath.Join(repo, "sub", "gone.txt"), "gone\n", 0o644)
	write(t, filepath.Join(repo, ".gitignore"), ".env\nnode_modules/\n*.log\n", 0o644)
	must(t, os.Symlink("a.txt", filepath.Join(repo, "lnk")))
	run(t, repo, "add", "-A")
	run(t, repo, "commit", "-q", "-m", "initial")

	write(t, filepath.Join(repo, "a.txt"), "a\nmodified\n", 0o644)
	must(t, os.Remove(filepath.Join(repo, "b.txt")))
	must(t, os.Chmod(filepath.Join(repo, "run.sh"), 0o644))
	write(t, filepath.Join(repo, "sub", "d.txt"), "d\nstaged\n", 0o644)
	run(t, repo, "add", "sub/d.txt")
	write(t, filepath.Join(repo, "sub", "d.txt"), "d\nstaged\nand more\n", 0o644)
	run(t, repo, "rm", "-q", "--cached", "sub/gone.txt")
	write(t, filepath.Join(repo, "untracked.txt"), "u\n", 0o640)
	write(t, filepath.Join(repo, "sub", "new.txt"), "new\n", 0o600)
	write(t, filepath.Join(repo, ".env"), "SECRET=1\n", 0o600)
	write(t, filepath.Join(repo, "node_modules", "x", "index.js"), "module.exports = 1\n", 0o644)
	write(t, filepath.Join(repo, "sub", "debug.log"), "log\n", 0o644)
	must(t, os.Symlink("../a.txt", filepath.Join(repo, "sub", "up")))
	must(t, os.Mkdir(filepath.Join(repo, "emptydir"), 0o750))
	return repo
}

// txDir is a staged workspace path as a transaction's state holds it: the
// parent is named after the id, which names the branch.
func txDir(t *testing.T, root, id string) string {
	t.Helper()
	p := filepath.Join(root, "tx", id)
	must(t, os.MkdirAll(p, 0o700))
	return filepath.Join(p, "staged")
}

func isGitMeta(rel string, _ bool) bool { return manifest.IsGitMeta(rel) }

// sameTree compares two trees byte for byte: types, modes, contents and
// symlink targets, leaving out .git and what skip leaves out.
func sameTree(t *testing.T, want, got string, skip func(string, bool) bool) {
	t.Helper()
	sk := func(rel string, isDir bool) bool { return isGitMeta(rel, isDir) || (skip != nil && skip(rel, isDir)) }
	w, g := facts(t, want, sk), facts(t, got, sk)
	for p, f := range w {
		h, ok := g[p]
		switch {
		case !ok:
			t.Errorf("%q: missing from the staged tree", p)
		case h.Type != f.Type || h.Mode != f.Mode || h.Data != f.Data:
			t.Errorf("%q: staged %v %v %q, base %v %v %q", p, h.Type, h.Mode, h.Data, f.Type, f.Mode, f.Data)
		}
	}
	for p := range g {
		if _, ok := w[p]; !ok {
			t.Errorf("%q: in the staged tree, not in the base", p)
		}
	}
}

func TestWorktreeStagesWorkingTree(t *testing.T) {
	needGit(t)
	tests := []struct {
		name string
		sub  string
		skip func(string, bool) bool
	}{
		{name: "repository top"},
		{name: "subdirectory", sub: "sub"},
		{name: "with excludes", skip: skipExcluded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			repo := dirtyRepo(t)
			base := filepath.Join(repo, tt.sub)
			state := t.TempDir()
			dir := txDir(t, state, "t1")
			b := worktreeBackend{}
			res, err := b.Stage(ctx, Request{Base: base, Dir: dir, Skip: tt.skip})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Remove(context.Background(), dir) })

			sameTree(t, base, dir+"/.", tt.skip)
			if tt.skip == nil {
				// git sees the staged tree as it sees the base: the same
				// modified, deleted, staged, untracked (and ignored) paths.
				for _, args := range [][]string{
					{"status", "--porcelain", "--", "."},
					{"status", "--porcelain", "--ignored", "--", "."},
					{"diff", "--cached", "--stat"},
				} {
					if got, want := run(t, dir, args...), run(t, base, args...); got != want {
						t.Errorf("git %s in the staged tree:\n%s\nin the base:\n%s", strings.Join(args, " "), got, want)
					}
				}
			}
			if got := run(t, dir, "rev-parse", "--abbrev-ref", "HEAD"); got != "airlock/t1\n" {
				t.Errorf("staged HEAD is on %q, want airlock/t1", got)
			}
			if got, want := run(t, dir, "rev-parse", "HEAD"), run(t, repo, "rev-parse", "HEAD"); got != want {
				t.Errorf("staged HEAD %s, base HEAD %s", got, want)
			}
			if tt.sub != "" {
				if got := run(t, dir, "rev-parse", "--show-prefix"); got != tt.sub+"/\n" {
					t.Errorf("staged dir is %q in its worktree, want %s/", got, tt.sub)
				}
			}

			// The manifests are the copy backend's (but for .git, which
			// is the worktree's own gitfile).
			cdir := txDir(t, state, "copy")
			cres, err := copyBackend{}.Stage(ctx, Request{Base: base, Dir: cdir, Skip: tt.skip})
			if err != nil {
				t.Fatal(err)
			}
			noGit := func(m *manifest.Manifest) []manifest.Entry {
				return slices.DeleteFunc(slices.Clone(m.Entries), func(e manifest.Entry) bool { return manifest.IsGitMeta(e.Path) })
			}
			wb, gb := noGit(cres.Base), noGit(res.Base)
			if len(wb) != len(gb) {
				t.Fatalf("base manifest has %d entries, copy's %d", len(gb), len(wb))
			}
			for i := range wb {
				if !manifest.SameStat(wb[i], gb[i]) || wb[i].Path != gb[i].Path {
					t.Errorf("base entry %+v, copy's %+v", gb[i], wb[i])
				}
			}
			ws, gs := noGit(cres.Staged), noGit(res.Staged)
			if len(ws) != len(gs) {
				t.Fatalf("staged manifest has %d entries, copy's %d", len(gs), len(ws))
			}
			for i := range ws {
				w, g := ws[i], gs[i]
				if w.Path != g.Path || w.Kind != g.Kind || w.Mode != g.Mode || w.Size != g.Size || w.Target != g.Target {
					t.Errorf("staged entry %+v, copy's %+v", g, w)
				}
			}
			// Result.Staged is the truth about the staged tree, .git
			// included, so that a diff sees nothing changed.
			now, err := manifest.Walk(ctx, dir, manifest.WalkOptions{})
			must(t, err)
			if len(now.Entries) != len(res.Staged.Entries) {
				t.Fatalf("staged tree has %d entries, Result.Staged %d", len(now.Entries), len(res.Staged.Entries))
			}
			for i, e := range now.Entries {
				if o := res.Staged.Entries[i]; o.Path != e.Path || !manifest.SameStat(o, e) {
					t.Errorf("staged %+v, Result.Staged %+v", e, o)
				}
			}
			if _, ok := res.Base.Lookup(".git"); ok != (tt.sub == "") {
				t.Errorf("base manifest has .git: %v", ok)
			}
		})
	}
}

func TestWorktreeRefuses(t *testing.T) {
	needGit(t)
	plain, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	write(t, filepath.Join(plain, "f"), "f\n", 0o644)
	empty, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	run(t, empty, "init", "-q")
	write(t, filepath.Join(empty, "f"), "f\n", 0o644)
	taken := dirtyRepo(t)
	run(t, taken, "branch", "airlock/t1")
	badID := dirtyRepo(t)
	tests := []struct {
		name, base, id, want string
	}{
		{"not a repository", plain, "t1", "is not in a git work tree: --backend worktree needs a git repository; use --backend copy"},
		{"no commit", empty, "t1", "has no commit yet"},
		{"branch exists", taken, "t1", "git branch airlock/t1 already exists"},
		{"id git cannot take", badID, "x.lock", "cannot name the git branch airlock/x.lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := txDir(t, t.TempDir(), tt.id)
			_, err := worktreeBackend{}.Stage(context.Background(), Request{Base: tt.base, Dir: dir})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Stage = %v, want an error with %q", err, tt.want)
			}
			for _, p := range []string{dir, recordPath(dir), dir + ".worktree", filling(dir)} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s left behind", p)
				}
			}
		})
	}
	if got := run(t, taken, "rev-parse", "airlock/t1"); got != run(t, taken, "rev-parse", "HEAD") {
		t.Errorf("the existing branch airlock/t1 moved or went: %s", got)
	}
	if got := run(t, taken, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("a refused open left a registration:\n%s", got)
	}
	var b worktreeBackend
	if _, err := b.Stage(context.Background(), Request{Base: plain, Dir: txDir(t, t.TempDir(), "t")}); !errors.Is(err, errNotRepo) {
		t.Errorf("not a repository: %v does not match errNotRepo", err)
	}
}

// TestWorktreeConcurrent opens and removes 8 worktrees of one repository
// at once: git's own locks would make some of them fail.
func TestWorktreeConcurrent(t *testing.T) {
	needGit(t)
	repo := dirtyRepo(t)
	state := t.TempDir()
	const n = 8
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = txDir(t, state, fmt.Sprintf("c%d", i))
	}
	b := worktreeBackend{}
	each := func(f func(dir string) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, d := range dirs {
			wg.Go(func() { errs[i] = f(d) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	each(func(d string) error {
		_, err := b.Stage(context.Background(), Request{Base: repo, Dir: d})
		return err
	})
	list := run(t, repo, "worktree", "list", "--porcelain")
	if got := strings.Count(list, "\nworktree ") + 1; got != n+1 {
		t.Fatalf("%d worktrees registered, want %d:\n%s", got, n+1, list)
	}
	for _, d := range dirs {
		sameTree(t, repo, d, nil)
	}
	each(func(d string) error { return b.Remove(context.Background(), d) })
	if list := run(t, repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left after removal:\n%s", list)
	}
	if got := run(t, repo, "branch", "--list", "airlock/*"); got != "" {
		t.Errorf("branches left after removal:\n%s", got)
	}
}

func TestWorktreeRemoveKeepsWork(t *testing.T) {
	needGit(t)
	commit := func(t *testing.T, dir, name string) string {
		write(t, filepath.Join(dir, name), name+"\n", 0o644)
		run(t, dir, "add", name)
		run(t, dir, "commit", "-q", "-m", name)
		return strings.TrimSpace(run(t, dir, "rev-parse", "HEAD"))
	}
	tests := []struct {
		name string
		// work is what the command does in the staged tree; it returns
		// the commit the branch must name if it is kept ("" when it must
		// be deleted).
		work     func(t *testing.T, repo, dir string) string
		detached bool
	}{
		{"no commits", func(t *testing.T, repo, dir string) string { return "" }, false},
		{"agent commit", func(t *testing.T, repo, dir string) string { return commit(t, dir, "agent.txt") }, false},
		{"commit another branch holds", func(t *testing.T, repo, dir string) string {
			c := commit(t, dir, "agent.txt")
			run(t, repo, "branch", "holder", c)
			return ""
		}, false},
		{"commit on a detached HEAD", func(t *testing.T, repo, dir string) string {
			run(t, dir, "checkout", "-q", "--detach")
			return commit(t, dir, "detached.txt")
		}, false},
		{"commits on the branch and on a detached HEAD", func(t *testing.T, repo, dir string) string {
			c := commit(t, dir, "agent.txt")
			run(t, dir, "checkout", "-q", "-f", "--detach", "HEAD~1")
			commit(t, dir, "detached.txt")
			return c
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			repo := dirtyRepo(t)
			dir := txDir(t, t.TempDir(), "k1")
			b := worktreeBackend{}
			if _, err := b.Stage(ctx, Request{Base: repo, Dir: dir}); err != nil {
				t.Fatal(err)
			}
			want := tt.work(t, repo, dir)
			if err := b.Remove(ctx, dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(dir); err == nil {
				t.Errorf("staged tree %s still there", dir)
			}
			if list := run(t, repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
				t.Errorf("registration left:\n%s", list)
			}
			br, err := WorktreeBranch(ctx, dir)
			if err != nil || br == nil {
				t.Fatalf("WorktreeBranch = %v, %v", br, err)
			}
			got := strings.TrimSpace(run(t, repo, "for-each-ref", "--format=%(objectname)", "refs/heads/airlock/k1"))
			if got != want {
				t.Errorf("branch airlock/k1 at %q, want %q", got, want)
			}
			if !br.Removed || br.Kept != (want != "") || (want != "" && br.Head != want) {
				t.Errorf("WorktreeBranch = %+v, want kept %v at %s", br, want != "", want)
			}
			if tt.detached {
				if br.Detached != "airlock/k1-detached" {
					t.Errorf("detached commits: branch %q, want airlock/k1-detached", br.Detached)
				}
				if out := run(t, repo, "log", "--format=%s", "airlock/k1-detached"); !strings.HasPrefix(out, "detached.txt\n") {
					t.Errorf("airlock/k1-detached does not hold the detached commit:\n%s", out)
				}
			}
			// Removing again is a no-op.
			if err := b.Remove(ctx, dir); err != nil {
				t.Errorf("second Remove: %v", err)
			}
		})
	}
}

func TestSweepWorktrees(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := dirtyRepo(t)
	state, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	b := worktreeBackend{}
	stage := func(id string) string {
		d := txDir(t, state, id)
		if _, err := b.Stage(ctx, Request{Base: repo, Dir: d}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	owned := stage("owned")
	gone := stage("gone")
	worked := stage("worked")
	crashed := stage("crashed")
	write(t, filepath.Join(worked, "w.txt"), "w\n", 0o644)
	run(t, worked, "add", "w.txt")
	run(t, worked, "commit", "-q", "-m", "work")
	workHead := strings.TrimSpace(run(t, worked, "rev-parse", "HEAD"))
	// Their state is gone, as if removed by hand, or renamed into trash.
	must(t, os.RemoveAll(filepath.Dir(gone)))
	must(t, os.MkdirAll(filepath.Join(state, "trash"), 0o700))
	must(t, os.Rename(filepath.Dir(worked), filepath.Join(state, "trash", "worked.1")))
	// The crashed open's opener is dead.
	dead := exec.Command("true")
	must(t, dead.Run())
	rec, err := readRecord(crashed)
	must(t, err)
	rec.PID, rec.Ready = dead.Process.Pid, false
	must(t, writeRecord(crashed, rec))
	if !HasWorktreeRecord(crashed) || OpenInProgress(crashed) {
		t.Fatalf("crashed open: record %v, in progress %v", HasWorktreeRecord(crashed), OpenInProgress(crashed))
	}
	if !OpenInProgress(owned) {
		t.Errorf("an open by this live process is not in progress")
	}

	o := SweepOptions{
		Under:  state,
		Staged: []string{crashed},
		Owned:  func(rel string) bool { return strings.HasPrefix(rel, "tx/owned/") },
	}
	dry := o
	dry.DryRun = true
	got, err := SweepWorktrees(ctx, dry)
	if err == nil && len(got) == 0 {
		// Staged names the repository; with no base given, that is the
		// only way to find it.
		t.Fatal("dry run found nothing")
	}
	must(t, err)
	before := run(t, repo, "worktree", "list", "--porcelain")
	if strings.Count(before, "worktree ") != 5 {
		t.Fatalf("dry run changed the registrations:\n%s", before)
	}
	o.Bases = []string{repo}
	swept, err := SweepWorktrees(ctx, o)
	must(t, err)
	var rels []string
	for _, s := range swept {
		rels = append(rels, s.Rel)
	}
	slices.Sort(rels)
	if want := []string{"tx/crashed/staged", "tx/gone/staged", "tx/worked/staged"}; !slices.Equal(rels, want) {
		t.Errorf("swept %q, want %q", rels, want)
	}
	list := run(t, repo, "worktree", "list", "--porcelain")
	if strings.Count(list, "worktree ") != 2 || !strings.Contains(list, "worktree "+owned+"\n") {
		t.Errorf("after the sweep, want the base and the owned worktree:\n%s", list)
	}
	branches := run(t, repo, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/airlock/")
	if want := "airlock/owned " + strings.TrimSpace(run(t, repo, "rev-parse", "HEAD")) + "\nairlock/worked " + workHead + "\n"; branches != want {
		t.Errorf("branches after the sweep:\n%s\nwant:\n%s", branches, want)
	}
	for _, s := range swept {
		if s.Rel == "tx/worked/staged" && (s.Branch == nil || !s.Branch.Kept || s.Branch.Head != workHead) {
			t.Errorf("sweep of the worked tree reports branch %+v, want kept at %s", s.Branch, workHead)
		}
	}
	if _, err := os.Lstat(crashed); err == nil {
		t.Errorf("the crashed open's tree %s is still there", crashed)
	}
	// Nothing left to do.
	if again, err := SweepWorktrees(ctx, o); err != nil || len(again) != 0 {
		t.Errorf("second sweep: %v, %v", again, err)
	}
	must(t, b.Remove(ctx, owned))
}

// TestWorktreeIndexCarriesStat: at the repository's top, the staged
// index carries the stat data of each staged file the base's index proves
// clean, so that git need not read it again, and none for a file changed
// since the base's index was written, even one whose size and mtime were
// put back.
func TestWorktreeIndexCarriesStat(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	repo := dirtyRepo(t)
	// Same size, mtime put back: only its ctime and bytes tell.
	c := filepath.Join(repo, "sub", "c.txt")
	fi, err := os.Stat(c)
	must(t, err)
	// The base's index is written once every file's stat is out of the
	// window, so that its entries are not racily clean.
	waitProven(t, repo)
	run(t, repo, "update-index", "-q", "--really-refresh")
	waitProven(t, filepath.Join(repo, ".git"))
	write(t, c, "C\n", 0o644)
	must(t, os.Chtimes(c, fi.ModTime(), fi.ModTime()))
	dir := txDir(t, t.TempDir(), "s1")
	b := worktreeBackend{}
	// A clock that proves every stat: the test trees are made within
	// moments of being staged.
	req := Request{Base: repo, Dir: dir, StateClock: provesAll, BaseClock: provesAll}
	if _, err := b.Stage(ctx, req); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Remove(context.Background(), dir) })
	inos := map[string]string{}
	out := run(t, dir, "ls-files", "--debug")
	var path string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, " ") {
			path = line
			continue
		}
		if _, ino, ok := strings.Cut(line, "ino: "); ok {
			inos[path] = ino
		}
	}
	ino := func(p string) string {
		var st syscall.Stat_t
		must(t, syscall.Lstat(filepath.Join(dir, p), &st))
		return fmt.Sprint(uint32(st.Ino))
	}
	if got, want := inos[".gitignore"], ino(".gitignore"); got != want {
		t.Errorf(".gitignore: staged index has inode %s, the staged file is %s", got, want)
	}
	if got := inos["sub/c.txt"]; got == ino("sub/c.txt") {
		t.Errorf("sub/c.txt changed since the base's index was written, yet its staged entry has the staged file's stat")
	}
	for _, args := range [][]string{
		{"status", "--porcelain"},
		{"diff", "--cached", "--stat"},
		{"diff", "--stat"},
	} {
		if got, want := run(t, dir, args...), run(t, repo, args...); got != want {
			t.Errorf("git %s in the staged tree:\n%s\nin the base:\n%s", strings.Join(args, " "), got, want)
		}
	}
	if got := run(t, dir, "status", "--porcelain", "--", "sub/c.txt"); got != " M sub/c.txt\n" {
		t.Errorf("git status of sub/c.txt in the staged tree: %q", got)
	}
}

// provesAll is a timestamp clock whose window is a nanosecond.
var provesAll = fsclock.Clock{StoredNs: 1, Measured: true}

func TestParseIndexDebug(t *testing.T) {
	oid := strings.Repeat("ab", 20)
	out := "100644 " + oid + " 0\ta b.txt\x00" +
		"  ctime: 1796180800:913546755\n  mtime: -2:7\n  dev: 65024\tino: -1\n  uid: 0\tgid: 5\n  size: 20\tflags: 4000\n" +
		"120000 " + oid + " 2\tlnk\x00" +
		"  ctime: 1:2\n  mtime: 3:4\n  dev: 5\tino: 6\n  uid: 7\tgid: 8\n  size: 9\tflags: 0\n"
	list, err := parseIndexDebug([]byte(out))
	must(t, err)
	if len(list) != 2 {
		t.Fatalf("%d entries, want 2", len(list))
	}
	a, l := list[0], list[1]
	if a.path != "a b.txt" || a.mode != 0o100644 || a.stage != 0 || a.flags != 0x4000 ||
		a.stat != (indexStat{ctimeS: 1796180800, ctimeN: 913546755, mtimeS: 1<<32 - 2, mtimeN: 7, dev: 65024, ino: 1<<32 - 1, gid: 5, size: 20}) {
		t.Errorf("first entry %+v", a)
	}
	if l.path != "lnk" || l.mode != 0o120000 || l.stage != 2 || l.stat.size != 9 {
		t.Errorf("second entry %+v", l)
	}
	for _, bad := range []string{
		"100644 " + oid + " 0\tx\x00  ctime: 1:2\n",
		"100644 " + oid + " 0\tx\x00  ctime: 1:2\n  mtime: 3:4\n  dev: 5\tinode: 6\n  uid: 7\tgid: 8\n  size: 9\tflags: 0\n",
		"100644 " + oid + " 0\tx",
		"100644 xyz 0\tx\x00",
	} {
		if _, err := parseIndexDebug([]byte(bad)); err == nil {
			t.Errorf("parseIndexDebug(%q) = nil error", bad)
		}
	}
}

func TestCarryStat(t *testing.T) {
	base, staged := t.TempDir(), t.TempDir()
	write(t, filepath.Join(base, "f"), "x\n", 0o644)
	write(t, filepath.Join(staged, "f"), "x\n", 0o644)
	walk := func(dir string) *manifest.Manifest {
		m, err := manifest.Walk(t.Context(), dir, manifest.WalkOptions{})
		must(t, err)
		return m
	}
	res := &Result{Base: walk(base), Staged: walk(staged)}
	req := Request{StateClock: provesAll, BaseClock: provesAll}
	clean := statOfEntry(res.Base.Entries[0])
	clean.uid, clean.gid = 1000, 1000 // another owner's base: ownership does not count
	stagedIno := uint32(res.Staged.Entries[0].Ino)
	written := time.Now().UnixNano()
	tests := []struct {
		name    string
		e       indexEntry
		written int64
		carried bool
	}{
		{"clean", indexEntry{mode: gitModeFile, stat: clean}, written, true},
		{"executable", indexEntry{mode: gitModeExec, stat: clean}, written, true},
		{"index unknown", indexEntry{mode: gitModeFile, stat: clean}, 0, false},
		{"racily clean", indexEntry{mode: gitModeFile, stat: clean}, res.Base.Entries[0].CtimeNs, false},
		{"conflicted", indexEntry{mode: gitModeFile, stage: 2, stat: clean}, written, false},
		{"skip-worktree", indexEntry{mode: gitModeFile, flags: 1 << 30, stat: clean}, written, false},
		{"symlink", indexEntry{mode: 0o120000, stat: clean}, written, false},
		{"other ctime", indexEntry{mode: gitModeFile, stat: func() indexStat { s := clean; s.ctimeN++; return s }()}, written, false},
		{"other inode", indexEntry{mode: gitModeFile, stat: func() indexStat { s := clean; s.ino++; return s }()}, written, false},
		{"smudged", indexEntry{mode: gitModeFile, stat: func() indexStat { s := clean; s.size = 0; return s }()}, written, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.e.path = "f"
			list := []indexEntry{tt.e}
			if got := carryStat(list, res, staged, tt.written, req); got != map[bool]int{true: 1, false: 0}[tt.carried] {
				t.Fatalf("carried %d entries", got)
			}
			switch {
			case tt.carried && (list[0].stat.ino != stagedIno || list[0].stat.uid != uint32(os.Getuid())):
				t.Errorf("carried stat %+v, not the staged file's (inode %d)", list[0].stat, stagedIno)
			case !tt.carried && list[0].stat != (indexStat{}):
				t.Errorf("an entry not carried has stat data %+v", list[0].stat)
			}
		})
	}
	// Not as staging measured it: written since.
	write(t, filepath.Join(staged, "f"), "y\n", 0o644)
	list := []indexEntry{{mode: gitModeFile, path: "f", stat: clean}}
	if carryStat(list, res, staged, written, req) != 0 {
		t.Errorf("a staged file changed since it was measured was carried")
	}
}

// TestWorktreeSHA256: the index airlock writes in a SHA-256 repository has
// SHA-256 ids and checksum.
func TestWorktreeSHA256(t *testing.T) {
	needGit(t)
	repo, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	if out, err := exec.Command("git", "init", "-q", "--object-format=sha256", repo).CombinedOutput(); err != nil {
		t.Skipf("this git makes no SHA-256 repository: %v\n%s", err, out)
	}
	write(t, filepath.Join(repo, "a.txt"), "a\n", 0o644)
	write(t, filepath.Join(repo, "b.txt"), "b\n", 0o644)
	run(t, repo, "add", "-A")
	run(t, repo, "commit", "-q", "-m", "one")
	write(t, filepath.Join(repo, "a.txt"), "a\nmore\n", 0o644)
	dir := txDir(t, t.TempDir(), "h1")
	b := worktreeBackend{}
	if _, err := b.Stage(context.Background(), Request{Base: repo, Dir: dir, StateClock: provesAll, BaseClock: provesAll}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Remove(context.Background(), dir) })
	if got, want := run(t, dir, "status", "--porcelain"), run(t, repo, "status", "--porcelain"); got != want {
		t.Errorf("git status in the staged tree:\n%s\nin the base:\n%s", got, want)
	}
	if got, want := run(t, dir, "ls-files", "-s"), run(t, repo, "ls-files", "-s"); got != want {
		t.Errorf("staged index:\n%s\nthe base's:\n%s", got, want)
	}
}
