package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The state root's watch daemon (internal/watchd): a warm run measures
// what changed in the base since the last open, and what touched the
// pooled tree since its own open, instead of walking either. These tests
// change the base (and the pool) every way the daemon must account for,
// and hold each run's tree to the base, byte for byte.

// listing prints every file and symlink of the current directory but
// .git, with its mode and a digest of its bytes: the same in the base and
// in a run's tree, or the tree is not the base.
const listing = `find . -path ./.git -prune -o \( -type f -o -type l \) -print | LC_ALL=C sort | while read -r p; do
if [ -L "$p" ]; then echo "$p -> $(readlink "$p")"; else echo "$p $(stat -c %a "$p") $(sha256sum <"$p" | cut -c1-16)"; fi
done`

// watchdShow is the part of `show --json` these tests read.
type watchdShow struct {
	Recycled *struct {
		From    string `json:"from"`
		Watched string `json:"watched"`
	} `json:"recycled"`
	NotRecycled string `json:"not_recycled"`
}

func (x *h) watchdShow(id string) watchdShow {
	x.t.Helper()
	r := x.airlock("show", id, "--json")
	wantCode(x.t, r, 0)
	var s watchdShow
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		x.t.Fatalf("show --json: %v\n%s", err, r.Stdout)
	}
	return s
}

// baseListing is listing run in the base itself.
func (x *h) baseListing() string {
	x.t.Helper()
	cmd := exec.Command("sh", "-c", listing)
	cmd.Dir = x.base
	out, err := cmd.Output()
	if err != nil {
		x.t.Fatalf("listing of the base: %v", err)
	}
	return string(out)
}

// runSeesBase runs listing in a warm run and fails unless its tree is the
// base; it returns how the run's refresh measured (recycled.watched).
func (x *h) runSeesBase(what string) string {
	x.t.Helper()
	want := x.baseListing()
	r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", listing)
	wantBlock(x.t, r, map[string]string{"outcome": "no_changes"})
	if r.Stdout != want {
		x.t.Fatalf("%s: the run's tree is not the base:\n--- run\n%s--- base\n%s", what, r.Stdout, want)
	}
	s := x.watchdShow(r.Settle["tx"])
	if s.Recycled == nil {
		x.t.Fatalf("%s: the run did not recycle (%s)", what, s.NotRecycled)
	}
	return s.Recycled.Watched
}

// watchdStart is a scenario whose base holds spec, backdated out of every
// timestamp window, with one run over it that copied it and pooled its
// tree.
func watchdStart(t *testing.T, spec tree) *h {
	t.Helper()
	x := newH(t)
	x.needWatchd()
	build(t, x.base, spec)
	backdate(t, x.base, time.Hour)
	wantBlock(t, x.airlock("run", "--workdir", x.base, "--", "true"), map[string]string{"outcome": "no_changes"})
	return x
}

// needWatchd stops the test where the run's tree cannot be watched or
// recycled here (doctor's contain check), naming why.
func (x *h) needWatchd() {
	x.t.Helper()
	x.needContain()
	if os.Getenv("AIRLOCK_NO_WATCH") == "1" {
		x.t.Skip("AIRLOCK_NO_WATCH=1: every run walks, and no daemon is asked")
	}
}

// TestE2EWatchdRefreshSeesEveryBaseChange: between warm runs the base is
// edited, grown, pruned, moved about and chmodded, written through a
// second name outside it made before the daemon began, and through a
// shared mapping held open across runs: each run's tree is the base, and
// the refresh measured it from the daemon's word, not a walk.
func TestE2EWatchdRefreshSeesEveryBaseChange(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	build(t, x.base, tree{"f": F(0o644, "f\n"), "sub/g": F(0o644, "g\n"), "sub/h": F(0o755, "h\n"),
		"linked": F(0o644, "linked\n"), "mapped": F(0o644, "0123456789\n"), "link": L("sub/g")})
	outside := testbin.RealDir(t)
	if err := os.Link(filepath.Join(x.base, "linked"), filepath.Join(outside, "linked")); err != nil {
		t.Fatal(err)
	}
	backdate(t, x.base, time.Hour)
	r := x.airlock("run", "--workdir", x.base, "--", "true") // copies, and pools its tree
	wantBlock(t, r, map[string]string{"outcome": "no_changes"})
	// A fresh copy's watch began after the copy was measured: the next
	// refresh walks the tree, with its own watch set before it does.
	if got := x.runSeesBase("the first warm run"); got != "base" {
		t.Errorf("the first warm run measured %q, want base (the tree walked)", got)
	}
	if got := x.runSeesBase("the second warm run"); got != "tree+base" {
		t.Errorf("the second warm run measured %q, want tree+base", got)
	}

	// Every kind of change, made while the daemon watches.
	writeFile(t, filepath.Join(x.base, "f"), "f changed\n")
	if err := os.MkdirAll(filepath.Join(x.base, "new/deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(x.base, "new/deep/n"), "n\n")
	if err := os.Remove(filepath.Join(x.base, "sub/h")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(x.base, "sub/g"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(x.base, "sub"), filepath.Join(x.base, "moved")); err != nil {
		t.Fatal(err)
	}
	// A shared mapping, opened while the daemon watches and kept open.
	mf, err := os.OpenFile(filepath.Join(x.base, "mapped"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	mem, err := syscall.Mmap(int(mf.Fd()), 0, 11, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	copy(mem, "ABC")
	// A directory moved makes the daemon's watch of the base start over:
	// this refresh walks the base.
	if got := x.runSeesBase("after the changes"); got != "tree" {
		t.Errorf("the run after the changes measured %q, want tree (the base walked)", got)
	}
	// That refresh made and removed directories in the tree, which its
	// run's watch has none on: the next refresh walks the tree.
	if got := x.runSeesBase("after a refresh that made directories"); got != "base" {
		t.Errorf("the run after a refresh that made directories measured %q, want base", got)
	}

	// Writes no event of the base names: through the second name, and
	// through the mapping still open, written back and written again (as
	// a database does: the write after a writeback moves the mtime, which
	// is all a walk would see too). (A second name made outside the base
	// after the daemon began is a known break:
	// TestKnownBreakWatchdSecondNameMadeOutside.)
	writeFile(t, filepath.Join(outside, "linked"), "written outside\n")
	if err := unix.Msync(mem, unix.MS_SYNC); err != nil {
		t.Fatal(err)
	}
	testbin.NextTick(t, x.home)
	copy(mem[3:], "DEF")
	if got := x.runSeesBase("after writes through other names and the mapping"); got != "tree+base" {
		t.Errorf("the run after writes through other names measured %q, want tree+base", got)
	}
	// A directory made by the run stops the pooled tree's watch from
	// being handed on (it has no watch there): the next refresh walks the
	// tree, and still sees the base through the daemon.
	r = x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "mkdir made && echo m > made/m")
	wantBlock(t, r, map[string]string{"outcome": "committed", "added": "1"})
	if got := x.runSeesBase("after a run made a directory"); got != "base" {
		t.Errorf("the run after one that made a directory measured %q, want base", got)
	}
}

// pooledTree is the tree a run pooled in the state root.
func (x *h) pooledTree(id string) string {
	x.t.Helper()
	m, _ := filepath.Glob(filepath.Join(x.state, "bases", "*", "pool", id, "tree"))
	if len(m) != 1 {
		x.t.Fatalf("the pooled tree of %s: found %q", id, m)
	}
	return m[0]
}

// heldPooledTree builds a small base, backdated, and runs over it until a
// warm run's tree is pooled with its watch held by the daemon (measured
// tree+base): the id of that run.
func (x *h) heldPooledTree() string {
	x.t.Helper()
	build(x.t, x.base, tree{"f": F(0o644, "f\n"), "sub/g": F(0o644, "g\n")})
	backdate(x.t, x.base, time.Hour)
	for i := 0; i < 2; i++ {
		wantBlock(x.t, x.airlock("run", "--workdir", x.base, "--", "true"), map[string]string{"outcome": "no_changes"})
	}
	r := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(x.t, r, map[string]string{"outcome": "no_changes"})
	if s := x.watchdShow(r.Settle["tx"]); s.Recycled == nil || s.Recycled.Watched != "tree+base" {
		x.t.Fatalf("the warm run: %+v", s)
	}
	return r.Settle["tx"]
}

// TestE2EWatchdSeesWritesToThePooledTree: whatever writes a pooled tree
// after its run settled (here, a process airlock did not start, writing
// by its path under the state root) is named by the daemon, which holds
// the run's watch: the next run never finds that write in its tree.
func TestE2EWatchdSeesWritesToThePooledTree(t *testing.T) {
	for _, c := range []struct{ name, script string }{
		{"a file rewritten", `echo planted > f`},
		{"a file rewritten with its times put back", `touch -r f /tmp/.ref.$$ && echo plante > f && touch -r /tmp/.ref.$$ f; rm -f /tmp/.ref.$$`},
		{"a file added", `echo planted > planted`},
		{"a file deep down added", `echo planted > sub/planted`},
		{"a mode changed", `chmod 600 sub/g`},
		{"a file removed", `rm sub/g`},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newH(t)
			x.needWatchd()
			cmd := exec.Command("sh", "-c", c.script)
			cmd.Dir = x.pooledTree(x.heldPooledTree())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c.script, err, out)
			}
			want := x.baseListing()
			r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", listing)
			wantBlock(t, r, map[string]string{"outcome": "no_changes"})
			if r.Stdout != want {
				t.Fatalf("the run's tree holds what was written into the pool:\n--- run\n%s--- base\n%s", r.Stdout, want)
			}
			if s := x.watchdShow(r.Settle["tx"]); s.Recycled != nil {
				t.Errorf("the written tree was reused: %+v", s.Recycled)
			} else if !strings.Contains(s.NotRecycled, "written after") {
				t.Errorf("not_recycled = %q, want it to say the tree was written after its transaction ended", s.NotRecycled)
			}
		})
	}
}

// TestE2EWatchdGoneMeansAWalk: a daemon that is gone (killed here) takes
// its watches with it; the next refresh walks both the tree and the base,
// and the one after is watched again by a new daemon.
func TestE2EWatchdGoneMeansAWalk(t *testing.T) {
	x := watchdStart(t, tree{"f": F(0o644, "f\n"), "sub/g": F(0o644, "g\n")})
	pid := watchdPid(t, x.state)
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !ended(t, pidfd, 10*time.Second) {
		t.Fatal("the killed daemon did not end")
	}
	writeFile(t, filepath.Join(x.base, "f"), "changed while no daemon ran\n")
	if got := x.runSeesBase("after the daemon was killed"); got != "" {
		t.Errorf("the run after the daemon was killed measured %q by a watch, want walks", got)
	}
	// That run started a new daemon, which holds its tree's watch.
	writeFile(t, filepath.Join(x.base, "sub/g"), "changed under the new daemon\n")
	if got := x.runSeesBase("under the new daemon"); got != "tree+base" {
		t.Errorf("the run under the new daemon measured %q, want tree+base", got)
	}
}

// TestE2EWatchdMountChangeMeansAWalk: a file system mounted over part of
// the base shows entries no watch covers: the next refresh walks the
// base.
func TestE2EWatchdMountChangeMeansAWalk(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	build(t, x.base, tree{"f": F(0o644, "f\n"), "sub/g": F(0o644, "g\n")})
	backdate(t, x.base, time.Hour)
	wantBlock(t, x.airlock("run", "--workdir", x.base, "--", "true"), map[string]string{"outcome": "no_changes"})
	x.runSeesBase("before the mount")
	if err := syscall.Mount("tmpfs", filepath.Join(x.base, "sub"), "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer syscall.Unmount(filepath.Join(x.base, "sub"), syscall.MNT_DETACH)
	writeFile(t, filepath.Join(x.base, "sub/on-the-mount"), "m\n")
	if got := x.runSeesBase("with a tmpfs over sub"); strings.Contains(got, "base") {
		t.Errorf("the run after a mount measured %q, want the base walked", got)
	}
}

// TestE2EWatchdHiddenFromTheCommand: a run's command finds nothing in the
// daemon's directory: it can neither ask the daemon nor hand it a watch.
func TestE2EWatchdHiddenFromTheCommand(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	wantBlock(t, x.airlock("run", "--workdir", x.base, "--", "true"), map[string]string{"outcome": "no_changes"})
	if _, err := os.Stat(filepath.Join(x.state, "watchd", "sock")); err != nil {
		t.Fatalf("the daemon's socket: %v", err)
	}
	r := x.airlockEnv([]string{"STATE=" + x.state}, "run", "--workdir", x.base, "--", "sh", "-c", `ls -A "$STATE/watchd"`)
	wantBlock(t, r, map[string]string{"outcome": "no_changes"})
	if strings.TrimSpace(r.Stdout) != "" {
		t.Errorf("the command sees the daemon's directory: %q", r.Stdout)
	}
}

// dirCtimes maps each directory beneath root (not root itself) to its
// ctime.
func dirCtimes(t *testing.T, root string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == root {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = st.Ctim.Nano()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestE2ERecycleLeavesUntouchedDirectoriesAlone: a refresh sets a
// directory's owner, mode and times only where they differ from the base.
// Setting them anyway moves the directory's ctime past the measurement of
// its tree, so that the next refresh cannot prove it untouched and sets
// them again, and so on, every run.
func TestE2ERecycleLeavesUntouchedDirectoriesAlone(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	build(t, x.base, tree{"a/b/f": F(0o644, "f\n"), "a/g": F(0o644, "g\n"), "c/h": F(0o600, "h\n"), "d": D(0o750)})
	backdate(t, x.base, time.Hour)
	for i := 0; i < 2; i++ {
		wantBlock(t, x.airlock("run", "--workdir", x.base, "--", "true"), map[string]string{"outcome": "no_changes"})
	}
	r := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(t, r, map[string]string{"outcome": "no_changes"})
	tree := x.pooledTree(r.Settle["tx"])
	before := dirCtimes(t, tree)
	testbin.NextTick(t, x.home) // a ctime set from here on differs (same file system)
	r = x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(t, r, map[string]string{"outcome": "no_changes"})
	after := dirCtimes(t, x.pooledTree(r.Settle["tx"]))
	if len(after) != len(before) || len(after) != 4 {
		t.Fatalf("the pooled tree's directories: %v, then %v", before, after)
	}
	for d, c := range before {
		if after[d] != c {
			t.Errorf("the refresh set %s again, though it was as the base has it", d)
		}
	}
}

// TestE2EWatchdGitSnapshotReused: an open reads what git knows of the base
// (HEAD, the tracked paths that differ from it) with one git status; a warm
// run whose daemon names nothing changed in the base since the pooled
// tree's open takes that open's snapshot instead (a git status in the
// base between the two changes nothing it reads). A commit, an index-only
// change, a change of the user's git configuration, or a configuration
// that includes files nothing watches, each makes git run again, and each
// snapshot is what git says of the base at that open.
func TestE2EWatchdGitSnapshotReused(t *testing.T) {
	x := newH(t)
	x.needWatchd()
	g := gitRepoBase(t, x, tree{"a.txt": F(0o644, "a\n"), "b.txt": F(0o644, "b\n")})
	backdate(t, x.base, time.Hour)
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	// git, as airlock finds it in PATH, logging each call.
	wrap := testbin.RealDir(t)
	calls := filepath.Join(wrap, "calls")
	writeFile(t, filepath.Join(wrap, "git"), "#!/bin/sh\necho \"$*\" >> "+calls+"\nexec "+realGit+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(wrap, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	x.env = append(x.env, "PATH="+wrap+":"+os.Getenv("PATH"))
	statuses := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "--untracked-files=no")
	}
	type snapshot struct {
		Head  string   `json:"head"`
		Dirty []string `json:"dirty"`
	}
	// run is a warm run: how many times it ran git status, and the
	// snapshot it recorded.
	run := func(what string) (int, snapshot) {
		t.Helper()
		before := statuses()
		r := x.airlock("run", "--workdir", x.base, "--", "true")
		wantBlock(t, r, map[string]string{"outcome": "no_changes"})
		var s snapshot
		b, err := os.ReadFile(filepath.Join(x.state, "tx", r.Settle["tx"], "git.json"))
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil {
			t.Fatalf("%s: the transaction's git snapshot: %v", what, err)
		}
		return statuses() - before, s
	}
	head := g(x.base, "rev-parse", "HEAD")
	if n, s := run("the first run"); n != 1 || s.Head != head {
		t.Fatalf("the first run ran git status %d times, snapshot %+v; want once, HEAD %s", n, s, head)
	}
	for _, what := range []string{"the first warm run", "the second warm run"} {
		if n, s := run(what); n != 0 || s.Head != head || len(s.Dirty) != 0 {
			t.Errorf("%s ran git status %d times, snapshot %+v; want none, the first run's", what, n, s)
		}
	}

	g(x.base, "commit", "-q", "--allow-empty", "-m", "second")
	head = g(x.base, "rev-parse", "HEAD")
	if n, s := run("after a commit"); n != 1 || s.Head != head {
		t.Errorf("after a commit: git status ran %d times, snapshot %+v; want once, HEAD %s", n, s, head)
	}
	// Only the index changes: b.txt's mode there differs from HEAD's.
	g(x.base, "update-index", "--chmod=+x", "b.txt")
	if n, s := run("after an index change"); n != 1 || len(s.Dirty) != 1 || s.Dirty[0] != "b.txt" {
		t.Errorf("after an index change: git status ran %d times, snapshot %+v; want once, b.txt dirty", n, s)
	}
	if n, s := run("after that"); n != 0 || s.Head != head || len(s.Dirty) != 1 || s.Dirty[0] != "b.txt" {
		t.Errorf("the run after: git status ran %d times, snapshot %+v; want none, b.txt dirty", n, s)
	}

	// A git status in the base takes the index lock and drops it again,
	// having found nothing to write (the first one here refreshes the
	// index: backdate moved every file's times): nothing it reads changed.
	g(x.base, "status", "--porcelain")
	run("after a git status that refreshed the index")
	g(x.base, "status", "--porcelain")
	if n, s := run("after a git status"); n != 0 || s.Head != head || len(s.Dirty) != 1 {
		t.Errorf("after a git status: git status ran %d times, snapshot %+v; want none, b.txt dirty", n, s)
	}

	// The user's configuration is read from outside the base.
	writeFile(t, filepath.Join(x.home, ".gitconfig"), "[core]\n\tfilemode = false\n")
	if n, _ := run("after a configuration change"); n != 1 {
		t.Errorf("after a change of ~/.gitconfig, git status ran %d times, want once", n)
	}
	if n, _ := run("after that"); n != 0 {
		t.Errorf("the run after: git status ran %d times, want none", n)
	}
	// A configuration that includes another file: its changes would go
	// unseen, so git runs every time.
	writeFile(t, filepath.Join(x.home, ".gitconfig"), "[include]\n\tpath = "+filepath.Join(x.home, "more.gitconfig")+"\n")
	for _, what := range []string{"with an include", "again with an include"} {
		if n, _ := run(what); n != 1 {
			t.Errorf("%s: git status ran %d times, want once", what, n)
		}
	}
}
