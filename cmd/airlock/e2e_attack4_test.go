package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Outside review of 93c3326 (a pooled tree that is exact, over a base the
// daemon names nothing changed in, is taken with nothing measured:
// stage.Unchanged) and of 8b43764 / 93c3326's git snapshot reuse
// (gitUntouched, gitContained). Each test states the guarantee it holds the
// shortcut to; those that fail show where the shortcut breaks it.

// rootFacts prints what a command sees of its workspace's root directory:
// its mode, its mtime and its user extended attributes (none on a fresh
// copy: staging sets the root's mode and times from the base's root, and
// copies no extended attribute).
const rootFacts = `stat -c '%a %Y' . && getfattr -d -m '^user\.' --absolute-names . 2>/dev/null | grep '^user\.' || true`

// baseRootFacts is rootFacts as a fresh copy of the base shows it.
func (x *h) baseRootFacts() string {
	x.t.Helper()
	fi, err := os.Stat(x.base)
	if err != nil {
		x.t.Fatal(err)
	}
	return fmt.Sprintf("%o %d\n", fi.Mode().Perm(), fi.ModTime().Unix())
}

// attack4Exact is a scenario whose pool holds a tree the next warm run
// takes by the exact path: two warm runs after the fresh copy (the first
// walks the copy; the second's tree is pooled exact, its watch held by the
// daemon).
func attack4Exact(t *testing.T) *h {
	t.Helper()
	testbin.Require(t, "getfattr", "the command lists its workspace root's extended attributes")
	x := watchdStart(t, tree{"f": F(0o644, "f\n"), "sub/g": F(0o644, "g\n")})
	x.warm("the first warm run", "true")
	x.warm("the second warm run", "true")
	return x
}

// warm runs script in a warm run that changes nothing, and returns its
// transaction.
func (x *h) warm(what, script string) string {
	x.t.Helper()
	r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", script)
	wantBlock(x.t, r, map[string]string{"outcome": "no_changes"})
	if s := x.watchdShow(r.Settle["tx"]); s.Recycled == nil {
		x.t.Fatalf("%s: the run did not recycle (%s)", what, s.NotRecycled)
	}
	return r.Settle["tx"]
}

// rootIsFresh runs rootFacts in a warm run measured by the daemon's word
// and fails unless the workspace's root is a fresh copy's.
func (x *h) rootIsFresh(what string) string {
	x.t.Helper()
	want := x.baseRootFacts()
	r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", rootFacts)
	wantBlock(x.t, r, map[string]string{"outcome": "no_changes"})
	s := x.watchdShow(r.Settle["tx"])
	if s.Recycled == nil || s.Recycled.Watched != "tree+base" {
		x.t.Fatalf("%s: want a warm run measured by the daemon's word (tree+base): %+v", what, s)
	}
	if r.Stdout != want {
		x.t.Errorf("%s: the command's workspace root is not a fresh copy's:\n--- run\n%s--- a fresh copy of the base\n%s", what, r.Stdout, want)
	}
	return r.Settle["tx"]
}

// TestAttack4ExactTreeKeepsRootFactsACommandSet: claim A (a pooled tree
// the exact path takes is byte for byte and mode for mode what a fresh
// copy of the base would be, so that the run's change set is right). The
// root directory's own facts are in no manifest: stage.Refresh sets them
// every time ("as staging does": extended attributes scrubbed, the base
// root's mode and mtime), stage.Unchanged does nothing to the tree. Both
// proofs of "exact" leave the root out: the settling walk compares
// entries (the root is none), and the next refresh's pool.unwritten lets
// the root's own path "" through. A command that sets the setgid bit on
// its workspace's root, an extended attribute and an old mtime, changing
// no entry, settles "no changes" with an exact tree; every later warm run
// starts in that root, and one that makes a directory commits it to the
// base setgid (2755), where the same command in a fresh copy commits 755.
// Before 93c3326 the refresh set the root back each time.
// FAILS on 93c3326.
func TestAttack4ExactTreeKeepsRootFactsACommandSet(t *testing.T) {
	testbin.Require(t, "setfattr", "the command sets an extended attribute on its workspace's root")
	x := attack4Exact(t)
	x.warm("the run that changes its root", "chmod 2755 . && setfattr -n user.attack4 -v left-by-an-earlier-run . && touch -d 2001-01-01 .")
	x.rootIsFresh("the run after the one that changed its root")
	x.rootIsFresh("a later warm run")
	// What a later run commits: a directory it makes inherits the root's
	// setgid bit, which the commit applies.
	r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "mkdir made && echo m > made/m")
	wantBlock(t, r, map[string]string{"outcome": "committed", "added": "1"})
	fi, err := os.Stat(filepath.Join(x.base, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSetuid | os.ModeSticky); got != 0o755 {
		t.Errorf("the base's new directory made has mode %v, want -rwxr-xr-x (what the same command commits from a fresh copy)", got)
	}
}

// TestAttack4ExactTreeKeepsRootFactsPlantedInPool: claim A, from outside.
// A process airlock did not start chmods the pooled tree's root and sets
// an extended attribute on it after its run settled (the pool's promise:
// a pooled tree written or chmodded after its run settled is never reused
// as it is). The daemon's held watch names only "", which pool.unwritten
// lets through; stage.Unchanged takes the tree with that root.
// FAILS on 93c3326.
func TestAttack4ExactTreeKeepsRootFactsPlantedInPool(t *testing.T) {
	x := attack4Exact(t)
	id := x.rootIsFresh("the third warm run")
	root := x.pooledTree(id)
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(root, "user.attack4", []byte("planted-in-the-pool"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(root, time.Unix(978307200, 0), time.Unix(978307200, 0)); err != nil {
		t.Fatal(err)
	}
	x.rootIsFresh("the run after the pooled tree's root was changed")
}

// gitTruth is what git says of the base now, asked as the open asks
// it: HEAD, and the tracked paths git status names (--no-optional-locks
// keeps it from refreshing the index, which would change the base).
func gitTruth(x *h, g func(dir string, args ...string) string) attack3Snap {
	x.t.Helper()
	s := attack3Snap{Head: g(x.base, "rev-parse", "HEAD")}
	out := x.sh(x.base, nil, "git", "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames", "--ignore-submodules=all", "--", ".")
	for _, rec := range strings.Split(out, "\x00") {
		if len(rec) >= 4 {
			s.Dirty = append(s.Dirty, rec[3:])
		}
	}
	slices.Sort(s.Dirty)
	return s
}

// gitSnapRun runs a warm run that changes nothing and fails unless its
// git snapshot is what git says of the base now.
func gitSnapRun(x *h, g func(dir string, args ...string) string, what string) {
	x.t.Helper()
	r := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(x.t, r, map[string]string{"outcome": "no_changes"})
	got, want := x.gitSnapOf(r.Settle["tx"]), gitTruth(x, g)
	if !sameSnap(got, want) {
		x.t.Errorf("%s: the transaction's git snapshot is %+v; git says %+v", what, got, want)
	}
}

// TestAttack4GitCleanFilterOutsideBase: claim C (a git snapshot is reused
// only where what git status reads lies in the base). The repository's
// own config (in the base, with no include, attributes file or work tree)
// names a clean filter, a program outside the base, which
// .git/info/attributes (in the base) applies to a.txt. Wherever a file's stat is not the one
// its index entry recorded (here: every file, the base being backdated
// after the commit, as a checkout, a copy with cp -a or a restore leaves
// it; and git status --no-optional-locks never refreshes the index), git
// status runs the filter and compares its output with HEAD's blob. The
// filter program is changed outside the base: git now names a.txt dirty,
// nothing in the base changed, and the warm run takes the old snapshot.
// FAILS on 93c3326.
func TestAttack4GitCleanFilterOutsideBase(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	g := gitRepoBase(t, x, tree{"a.txt": F(0o644, "a\n"), "b.txt": F(0o644, "b\n")})
	writeFile(t, filepath.Join(x.base, ".git", "info", "attributes"), "a.txt filter=outside\n")
	filter := filepath.Join(testbin.RealDir(t), "clean")
	writeFile(t, filter, "#!/bin/sh\nexec cat\n")
	if err := os.Chmod(filter, 0o755); err != nil {
		t.Fatal(err)
	}
	g(x.base, "config", "--local", "filter.outside.clean", filter)
	backdate(t, x.base, time.Hour)
	gitSnapRun(x, g, "the first run")
	gitSnapRun(x, g, "the first warm run")
	writeFile(t, filter, "#!/bin/sh\nexec tr a-z A-Z\n")

	if d := gitTruth(x, g).Dirty; len(d) != 1 || d[0] != "a.txt" {
		t.Fatalf("git names %q dirty after the filter changed, want a.txt", d)
	}
	gitSnapRun(x, g, "after the clean filter outside the base changed")
}

// TestAttack4GitDirNotARepository: claim C. gitContained takes a .git
// directory of the base, with a config file and no symlink beneath it,
// for the repository git reads; git takes a .git directory only when it
// is a repository (HEAD, objects, refs), and otherwise goes on looking in
// the directories above. Here the base's .git holds only an empty config,
// and the directory above the base is a repository whose core.worktree is
// the base: git status in the base reads it (prefix "", as reuseGit
// wants). A commit there moves the base's HEAD with nothing changed in the
// base; the warm run takes the old snapshot.
// FAILS on 93c3326.
func TestAttack4GitDirNotARepository(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	testbin.Require(t, "git", "the base is a git work tree")
	g := agentGit(t, x)
	outer := testbin.RealDir(t)
	base := filepath.Join(outer, "base")
	build(t, base, tree{"a.txt": F(0o644, "a\n"), ".git/config": F(0o644, "")})
	x.base = base
	g(outer, "init", "-q", "-b", "main")
	g(outer, "config", "core.worktree", base)
	g(base, "add", "a.txt")
	g(base, "commit", "-q", "-m", "initial")
	if p := g(base, "rev-parse", "--show-prefix"); p != "" {
		t.Fatalf("git's prefix in the base is %q, want none", p)
	}
	backdate(t, base, time.Hour)
	gitSnapRun(x, g, "the first run")
	gitSnapRun(x, g, "the first warm run")
	g(base, "commit", "-q", "--allow-empty", "-m", "second")
	gitSnapRun(x, g, "after a commit to the repository above the base")
}

// TestAttack4GitDirOwnerChanged: claim B (a change the daemon names as
// ".git" alone never alters what git status reports). The git
// directory's owner moved to another user (a chown names ".git" only: its
// parent's watch and its own): git now refuses the repository ("detected
// dubious ownership"), and an open that asks git records no snapshot; the
// warm run takes the earlier one, HEAD and all, as if git had answered.
// FAILS on 93c3326.
func TestAttack4GitDirOwnerChanged(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	if os.Geteuid() != 0 {
		t.Skip("only root gives a directory to another user")
	}
	g := gitRepoBase(t, x, tree{"a.txt": F(0o644, "a\n")})
	backdate(t, x.base, time.Hour)
	gitSnapRun(x, g, "the first run")
	gitSnapRun(x, g, "the first warm run")
	if err := os.Chown(filepath.Join(x.base, ".git"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	r := testbin.Run(t, testbin.Cmd{Bin: "git", Args: []string{"--no-optional-locks", "status", "--porcelain", "-uno"}, Dir: x.base, Env: x.environ(), Timeout: commandTimeout})
	if r.Code == 0 || !strings.Contains(r.Stderr, "dubious ownership") {
		t.Fatalf("git status in the base after the chown: exit %d, want a refusal naming dubious ownership\n%s", r.Code, r.Stderr)
	}
	run := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(t, run, map[string]string{"outcome": "no_changes"})
	if b, err := os.ReadFile(filepath.Join(x.state, "tx", run.Settle["tx"], "git.json")); err == nil {
		t.Errorf("git refuses the base's repository, yet the warm run recorded a git snapshot: %s", b)
	}
	// The control, after: an open that asks git records none.
	fresh := x.airlock("run", "--fresh", "--workdir", x.base, "--", "true")
	wantBlock(t, fresh, map[string]string{"outcome": "no_changes"})
	if b, err := os.ReadFile(filepath.Join(x.state, "tx", fresh.Settle["tx"], "git.json")); err == nil {
		t.Fatalf("the control: a fresh open recorded a git snapshot of a repository git refuses: %s", b)
	}
}

// TestAttack4BaseRootChangeIsSeen: claim A, on the base's side. The base
// root's own mode, times and owner are in no manifest either; a change to
// them names "" in the base, which the exact path does not let through
// (only the tree's "" is), so the refresh sets the tree's root to the
// base's. PASSES on 93c3326; the suite had no warm run after a change to
// the base root alone.
func TestAttack4BaseRootChangeIsSeen(t *testing.T) {
	x := attack4Exact(t)
	x.rootIsFresh("the third warm run")
	if err := os.Chmod(x.base, 0o750); err != nil {
		t.Fatal(err)
	}
	x.rootIsFresh("after the base root was chmodded")
	old := time.Unix(1000000000, 0)
	if err := os.Chtimes(x.base, old, old); err != nil {
		t.Fatal(err)
	}
	x.rootIsFresh("after the base root's times were set")
	if os.Geteuid() == 0 {
		if err := os.Chown(x.base, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		x.rootIsFresh("after the base root was given to another user")
	}
}
