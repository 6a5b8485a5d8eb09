package watchd

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/watch"
)

// The test binary is also the daemon the tests start.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

func write(t testing.TB, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tempDir is a directory the daemon's exit check does not outlive: the
// test removes it, and the daemon, holding nothing, exits.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "watchd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestSinceNamesWhatChanged(t *testing.T) {
	d := tempDir(t)
	base := filepath.Join(d, "base")
	write(t, filepath.Join(base, "a.txt"), "a")
	write(t, filepath.Join(base, "sub", "b.txt"), "b")
	write(t, filepath.Join(base, "sub", "untouched.txt"), "u")
	write(t, filepath.Join(base, "linked.txt"), "l")
	if err := os.Link(filepath.Join(base, "linked.txt"), filepath.Join(d, "outside-name")); err != nil {
		t.Fatal(err)
	}
	c := New(filepath.Join(d, "state"))
	tok, err := c.Token(base)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing yet but the file with a second name, which is always named.
	ch, _, err := c.Since(base, tok)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ch.Paths, []string{"linked.txt"}) || len(ch.Trees) != 0 {
		t.Fatalf("before any change: %+v", ch)
	}
	write(t, filepath.Join(base, "sub", "b.txt"), "b2")
	write(t, filepath.Join(base, "new", "deep", "c.txt"), "c")
	os.Remove(filepath.Join(base, "a.txt"))
	held, err := os.OpenFile(filepath.Join(base, "sub", "untouched.txt"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	ch, renewed, err := c.Since(base, tok)
	if err != nil {
		t.Fatal(err)
	}
	// Beneath the new directory, what its watch saw once it was set may
	// be named too (the daemon watches it from its creation's event on):
	// more names, never fewer.
	var paths, trees []string
	for _, p := range ch.Paths {
		if p != "new" && !strings.HasPrefix(p, "new/") {
			paths = append(paths, p)
		}
	}
	for _, p := range ch.Trees {
		if p != "new" && !strings.HasPrefix(p, "new/") {
			trees = append(trees, p)
		}
	}
	slices.Sort(paths)
	want := []string{"", "a.txt", "linked.txt", "sub/b.txt", "sub/untouched.txt"}
	if !slices.Equal(paths, want) || len(trees) != 0 || !slices.Contains(ch.Trees, "new") {
		t.Fatalf("got %+v, want paths %q and the tree new", ch, want)
	}
	// A new directory is watched from its event on; a token renewed with
	// an answer names what changed after that answer, as one asked for.
	tok2, err := c.Token(base)
	if err != nil {
		t.Fatal(err)
	}
	if renewed == "" {
		t.Fatal("the answer renewed no token")
	}
	held.Close()
	write(t, filepath.Join(base, "new", "deep", "c.txt"), "c2")
	for _, tk := range []string{tok2, renewed} {
		ch, _, err = c.Since(base, tk)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ch.Paths)
		if !slices.Equal(ch.Paths, []string{"linked.txt", "new/deep/c.txt", "sub/untouched.txt"}) {
			t.Fatalf("after the second token: %+v", ch)
		}
	}
	// A token of another instance is unknown.
	if _, _, err := c.Since(base, "0000:1"); err == nil {
		t.Fatal("a token of another daemon was answered")
	}
}

func TestTakeNamesWhatTouchedAHeldTree(t *testing.T) {
	d := tempDir(t)
	tree := filepath.Join(d, "tree")
	write(t, filepath.Join(tree, "a.txt"), "a")
	write(t, filepath.Join(tree, "sub", "b.txt"), "b")
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	dirs := map[int32]string{}
	for _, rel := range []string{"", "sub"} {
		wd, err := unix.InotifyAddWatch(fd, filepath.Join(tree, rel), baseEvents|unix.IN_ONLYDIR)
		if err != nil {
			t.Fatal(err)
		}
		dirs[int32(wd)] = rel
	}
	c := New(filepath.Join(d, "state"))
	if _, err := c.Token(tree); err != nil { // starts the daemon
		t.Fatal(err)
	}
	key := "k" + strconv.Itoa(os.Getpid())
	if err := c.Hold(key, tree, tree, fd, dirs); err != nil {
		t.Fatal(err)
	}
	if err := c.Hold(key, tree, tree, fd, dirs); err == nil {
		t.Fatal("a key was held twice")
	}
	if _, _, err := c.Take(key, false); err == nil {
		t.Fatal("a key handed twice was taken")
	}
	key += "b"
	if err := c.Hold(key, tree, tree, fd, dirs); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tree, "sub", "b.txt"), "b2")
	if err := os.Rename(tree, tree+".moved"); err != nil { // the root's move is no change
		t.Fatal(err)
	}
	ch, _, err := c.Take(key, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ch.Paths, "sub/b.txt") || slices.Contains(ch.Paths, "a.txt") {
		t.Fatalf("took %+v", ch)
	}
	if _, _, err := c.Take(key, false); err == nil {
		t.Fatal("a tree was taken twice")
	}
}

// A watch given back by a take goes on from where the daemon stopped
// reading: a write after the take is the resumed watch's, and nothing
// between the two is lost.
func TestTakeGivesTheWatchBack(t *testing.T) {
	d := tempDir(t)
	tree := filepath.Join(d, "tree")
	write(t, filepath.Join(tree, "a.txt"), "a")
	write(t, filepath.Join(tree, "sub", "b.txt"), "b")
	w, err := watch.Start(tree, []string{"sub"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Pause(); err != nil {
		t.Fatal(err)
	}
	c := New(filepath.Join(d, "state"))
	if _, err := c.Token(tree); err != nil { // starts the daemon
		t.Fatal(err)
	}
	fd, dirs := w.Hand()
	if err := c.Hold("k", tree, tree, fd, dirs); err != nil {
		t.Fatal(err)
	}
	w.Close()
	write(t, filepath.Join(tree, "a.txt"), "a2")
	ch, kept, err := c.Take("k", true)
	if err != nil {
		t.Fatal(err)
	}
	if kept == nil {
		t.Fatal("a whole watch was not given back")
	}
	if !slices.Contains(ch.Paths, "a.txt") || slices.Contains(ch.Paths, "sub/b.txt") {
		t.Fatalf("took %+v", ch)
	}
	if !maps.Equal(kept.Dirs, dirs) {
		t.Fatalf("given back with directories %v, want %v", kept.Dirs, dirs)
	}
	r, err := watch.Resume(tree, kept.FD, kept.Dirs)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tree, "sub", "b.txt"), "b2")
	got, err := r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if !got.Paths["sub/b.txt"] || got.Paths["a.txt"] {
		t.Fatalf("the resumed watch saw %v, want sub/b.txt only", got.Paths)
	}
	// A watch that is not whole is not given back.
	w, err = watch.Start(tree, []string{"sub"})
	if err != nil {
		t.Fatal(err)
	}
	w.Pause()
	fd, dirs = w.Hand()
	if err := c.Hold("k2", tree, tree, fd, dirs); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := os.RemoveAll(tree); err != nil {
		t.Fatal(err)
	}
	if _, kept, err := c.Take("k2", true); err == nil && kept != nil {
		t.Fatal("the watch of a deleted tree was given back")
	}
}

func TestMountChangeIsUnknown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	d := tempDir(t)
	base := filepath.Join(d, "base")
	write(t, filepath.Join(base, "sub", "g"), "g")
	c := New(filepath.Join(d, "state"))
	tok, err := c.Token(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", filepath.Join(base, "sub"), "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(filepath.Join(base, "sub"), unix.MNT_DETACH)
	if ch, _, err := c.Since(base, tok); err == nil {
		t.Fatalf("after a mount: %+v", ch)
	}
}

// TestAnotherDirectoryAtTheBasePath: a base path that names another
// directory than the one watched (a directory above it replaced) is
// unknown, and the next token watches the new one.
func TestAnotherDirectoryAtTheBasePath(t *testing.T) {
	d := tempDir(t)
	base := filepath.Join(d, "up", "base")
	write(t, filepath.Join(base, "f"), "f")
	c := New(filepath.Join(d, "state"))
	tok, err := c.Token(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(d, "up"), filepath.Join(d, "up.old")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(base, "g"), "g")
	if ch, _, err := c.Since(base, tok); err == nil {
		t.Fatalf("another directory at the base's path: %+v", ch)
	}
	tok, err = c.Token(base)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(base, "g"), "g2")
	ch, _, err := c.Since(base, tok)
	if err != nil || !slices.Equal(ch.Paths, []string{"g"}) {
		t.Fatalf("the new directory's watch: %+v, %v", ch, err)
	}
}

// A tree of thousands of directories makes a hold request, and a take's
// reply, larger than one write to the socket carries; a base where
// thousands of files changed makes a large answer. Each arrives whole.
func TestLargeRequestsAndReplies(t *testing.T) {
	d := tempDir(t)
	tree := filepath.Join(d, "tree")
	long := strings.Repeat("x", 200)
	var want []string
	for i := range 1500 {
		name := fmt.Sprintf("d%04d%s", i, long)
		if err := os.MkdirAll(filepath.Join(tree, name), 0o755); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	w, err := watch.Start(tree, want)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Pause(); err != nil {
		t.Fatal(err)
	}
	c := New(filepath.Join(d, "state"))
	base := filepath.Join(d, "base")
	write(t, filepath.Join(base, "seed"), "s")
	tok, err := c.Token(base) // starts the daemon
	if err != nil {
		t.Fatal(err)
	}
	fd, dirs := w.Hand()
	if err := c.Hold("k", base, tree, fd, dirs); err != nil {
		t.Fatalf("hold of %d directories: %v", len(dirs), err)
	}
	w.Close()
	_, kept, err := c.Take("k", true)
	if err != nil {
		t.Fatalf("take of %d directories: %v", len(dirs), err)
	}
	if kept == nil {
		t.Fatal("the watch of a whole tree was not given back")
	}
	defer unix.Close(kept.FD)
	if !maps.Equal(kept.Dirs, dirs) {
		t.Fatalf("given back with %d directories, want %d", len(kept.Dirs), len(dirs))
	}
	for _, name := range want {
		write(t, filepath.Join(base, name), "f")
	}
	ch, _, err := c.Since(base, tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range want {
		if !slices.Contains(ch.Paths, name) {
			t.Fatalf("the answer does not name %s (%d paths)", name, len(ch.Paths))
		}
	}
}
