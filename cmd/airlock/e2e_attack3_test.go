package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Outside review of 098dda7 (warm run shortcuts): each test states the
// guarantee it holds the shortcut to, and fails where the shortcut breaks
// it.

// attack3Snap is a transaction's git snapshot (git.json).
type attack3Snap struct {
	Head  string   `json:"head"`
	Dirty []string `json:"dirty"`
}

// gitSnapOf reads the git snapshot the transaction id recorded at open.
func (x *h) gitSnapOf(id string) attack3Snap {
	x.t.Helper()
	var s attack3Snap
	b, err := os.ReadFile(filepath.Join(x.state, "tx", id, "git.json"))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		x.t.Fatalf("the git snapshot of %s: %v", id, err)
	}
	slices.Sort(s.Dirty)
	return s
}

func sameSnap(a, b attack3Snap) bool { return a.Head == b.Head && slices.Equal(a.Dirty, b.Dirty) }

// TestAttack3GitRefsOutsideBase: claim 2 (a reused git snapshot is what
// git status would say now). The base is a work tree made the way
// git-new-workdir (git's contrib/workdir) makes one: its .git is a
// directory in the base, but its refs, objects and config are symlinks
// into another repository. A commit made in that repository moves the
// base's HEAD while nothing in the base changes (the daemon's watch never
// follows a symlink), so the daemon names nothing and the warm run takes
// the previous open's snapshot, with the old HEAD: the base commit that
// merges and `land --remote` use is not the base's HEAD.
// Failed on 098dda7.
func TestAttack3GitRefsOutsideBase(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	testbin.Require(t, "git", "the base is a git work tree")
	g := agentGit(t, x)
	main := testbin.RealDir(t)
	build(t, main, tree{"a.txt": F(0o644, "a\n")})
	g(main, "init", "-q", "-b", "main")
	g(main, "add", "-A")
	g(main, "commit", "-q", "-m", "initial")
	g(main, "checkout", "-q", "--detach") // main's own work tree leaves the branch alone
	// git-new-workdir main base main
	if err := os.MkdirAll(filepath.Join(x.base, ".git", "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"config", "refs", "logs/refs", "objects", "info", "hooks", "packed-refs"} {
		if err := os.Symlink(filepath.Join(main, ".git", p), filepath.Join(x.base, ".git", p)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(x.base, ".git", "HEAD"), "ref: refs/heads/main\n")
	// A name that sorts between .git and the paths beneath it.
	writeFile(t, filepath.Join(x.base, ".git-x"), "x\n")
	g(x.base, "checkout", "-f", "-q", "main")
	backdate(t, x.base, time.Hour)

	gitSnapRun(x, g, "the first run")
	gitSnapRun(x, g, "the first warm run")
	// Elsewhere, in the repository the base shares its refs with.
	g(main, "commit", "-q", "--allow-empty", "-m", "second")
	g(main, "update-ref", "refs/heads/main", "HEAD")
	gitSnapRun(x, g, "after a commit to the base's branch")
}

// TestAttack3GitRepoConfigIncludesOutside: claim 2. gitbase.Inputs gives
// up ("") on a user or system configuration that includes another file,
// whose changes nothing would see; the repository's own .git/config is
// not looked at. It includes a file outside the base here, which says
// core.fileMode = false; a.txt's executable bit differs from HEAD, which
// git then ignores. The included file is changed to core.fileMode = true:
// git status now names a.txt, nothing in the base changed, and the warm
// run takes the old snapshot (a.txt clean).
// Failed on 098dda7.
func TestAttack3GitRepoConfigIncludesOutside(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	g := gitRepoBase(t, x, tree{"a.txt": F(0o644, "a\n"), "b.txt": F(0o644, "b\n")})
	outside := filepath.Join(testbin.RealDir(t), "shared.gitconfig")
	writeFile(t, outside, "[core]\n\tfileMode = false\n")
	g(x.base, "config", "--local", "--unset", "core.filemode")
	g(x.base, "config", "--local", "include.path", outside)
	if err := os.Chmod(filepath.Join(x.base, "a.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	backdate(t, x.base, time.Hour)
	gitSnapRun(x, g, "the first run")
	gitSnapRun(x, g, "the first warm run")
	writeFile(t, outside, "[core]\n\tfileMode = true\n")
	if d := gitTruth(x, g).Dirty; !slices.Equal(d, []string{"a.txt"}) {
		t.Fatalf("git names %q dirty after fileMode = true, want a.txt", d)
	}
	gitSnapRun(x, g, "after the included configuration changed")
}

// TestAttack3ResumedWatchSeesCommandWrites: claim 1 (the watch the daemon
// gives back is the run's, and watches every directory of the tree). From
// the third run on, a warm run takes the pooled tree's inotify instance
// back from the daemon and sets no watch of its own; its command's writes,
// deep in directories whose watches were set two runs before, and one
// that puts the file's size and times back, must each reach the base.
// PASSES on 098dda7 (the claim holds here); the suite had no run whose
// own command wrote through a watch given back.
func TestAttack3ResumedWatchSeesCommandWrites(t *testing.T) {
	x := watchdStart(t, tree{"f": F(0o644, "f\n"), "sub/g": F(0o644, "g\n"), "sub/deep/h": F(0o644, "h\n"), "other/i": F(0o644, "i\n")})
	if got := x.runSeesBase("the first warm run"); got != "base" {
		t.Fatalf("the first warm run measured %q, want base", got)
	}
	for i, c := range []struct{ script, path, want string }{
		{"echo H > sub/deep/h", "sub/deep/h", "H\n"},
		{"touch -r other/i /tmp/.r.$$ && echo I > other/i && touch -r /tmp/.r.$$ other/i && rm -f /tmp/.r.$$", "other/i", "I\n"},
		{"echo G > sub/g", "sub/g", "G\n"},
	} {
		r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", c.script)
		wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1"})
		if s := x.watchdShow(r.Settle["tx"]); s.Recycled == nil || s.Recycled.Watched != "tree+base" {
			t.Fatalf("run %d was not measured by the daemon's word (tree+base): %+v", i, s)
		}
		if b, err := os.ReadFile(filepath.Join(x.base, c.path)); err != nil || string(b) != c.want {
			t.Errorf("run %d: the base's %s holds %q (%v), want %q", i, c.path, b, err, c.want)
		}
	}
	x.runSeesBase("after the writes")
}
