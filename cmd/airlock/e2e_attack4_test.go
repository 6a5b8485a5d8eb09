package main_test

import (
	"fmt"
	"os"
	"path/filepath"
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
