package watch_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/watch"
)

// tree writes a small tree: a few levels of directories with files and
// a symlink.
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"a", "a/b", "a/b/c", "d", "d/e", "f"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := os.WriteFile(filepath.Join(root, d, fmt.Sprintf("x%d", i)), []byte(d), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink("a/x0", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	return root
}

func dirsOf(m *manifest.Manifest) []string {
	var out []string
	for _, e := range m.Entries {
		if e.Kind == manifest.KindDir {
			out = append(out, e.Path)
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// watched writes a tree, measures it and watches it.
func watched(t *testing.T) (string, *manifest.Manifest, *watch.Watch) {
	t.Helper()
	root := tree(t)
	before, err := manifest.Walk(context.Background(), root, manifest.WalkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watch.Start(root, dirsOf(before))
	if err != nil {
		t.Fatal(err)
	}
	return root, before, w
}

// patchEqualsWalk fails the test unless the manifest the watch's changes
// make of before is what a walk of root measures now.
func patchEqualsWalk(t *testing.T, what, root string, before *manifest.Manifest, w *watch.Watch) {
	t.Helper()
	got, err := patched(t, root, before, w)
	if err != nil {
		t.Fatal(err)
	}
	want, err := manifest.Walk(context.Background(), root, manifest.WalkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	same(t, what, got, want)
}

// patched is the manifest the watch's changes make of before.
func patched(t *testing.T, root string, before *manifest.Manifest, w *watch.Watch) (*manifest.Manifest, error) {
	t.Helper()
	ch, err := w.Stop()
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	return manifest.Patch(context.Background(), root, before, keys(ch.Paths), keys(ch.Trees), manifest.WalkOptions{})
}

// same fails the test unless a and b hold the same entries.
func same(t *testing.T, what string, got, want *manifest.Manifest) {
	t.Helper()
	g, w := got.Entries, want.Entries
	for i := 0; i < max(len(g), len(w)); i++ {
		switch {
		case i >= len(g):
			t.Fatalf("%s: the patch misses %+v", what, w[i])
		case i >= len(w):
			t.Fatalf("%s: the patch has %+v, which the walk does not", what, g[i])
		}
		a, b := g[i], w[i]
		a.Digest, b.Digest = "", ""
		if a != b {
			t.Fatalf("%s: entry %d: patch %+v, walk %+v", what, i, a, b)
		}
	}
}

// TestPatchEqualsWalk: whatever a random sequence of writes does to a
// tree (edits, truncations, modes, times, creations, deletions, renames
// of files and directories, symlinks, new directories with contents,
// mmap writes), the manifest the watch's changes patch equals a walk.
func TestPatchEqualsWalk(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			root, before, w := watched(t)
			rng := rand.New(rand.NewPCG(seed, 7))
			for range 30 {
				mutate(t, rng, root)
			}
			patchEqualsWalk(t, "seed "+fmt.Sprint(seed), root, before, w)
		})
	}
}

// paths lists every path under root (files and directories), relative.
func paths(root string) (files, dirs []string) {
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			dirs = append(dirs, rel)
		} else {
			files = append(files, rel)
		}
		return nil
	})
	return files, dirs
}

func pick(rng *rand.Rand, s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[rng.IntN(len(s))]
}

// mutate makes one random change under root; a change that the tree's
// shape refuses (a rename into its own subtree) is simply not made.
func mutate(t *testing.T, rng *rand.Rand, root string) {
	t.Helper()
	files, dirs := paths(root)
	dirs = append(dirs, ".")
	at := func(rel string) string { return filepath.Join(root, rel) }
	name := fmt.Sprintf("n%d", rng.IntN(1000))
	switch rng.IntN(14) {
	case 0: // append
		if f := pick(rng, files); f != "" {
			if fh, err := os.OpenFile(at(f), os.O_WRONLY|os.O_APPEND, 0); err == nil {
				fh.WriteString("more")
				fh.Close()
			}
		}
	case 1: // truncate by path
		if f := pick(rng, files); f != "" {
			os.Truncate(at(f), 1)
		}
	case 2: // chmod
		if f := pick(rng, files); f != "" {
			os.Chmod(at(f), 0o600)
		}
	case 3: // times
		if f := pick(rng, files); f != "" {
			old := time.Unix(1_000_000, 0)
			os.Chtimes(at(f), old, old)
		}
	case 4: // a new file
		os.WriteFile(filepath.Join(at(pick(rng, dirs)), name), []byte("new"), 0o644)
	case 5: // delete a file
		if f := pick(rng, files); f != "" {
			os.Remove(at(f))
		}
	case 6: // rename a file, maybe over another
		if f := pick(rng, files); f != "" {
			os.Rename(at(f), filepath.Join(at(pick(rng, dirs)), name))
		}
	case 7: // a new directory with contents
		d := filepath.Join(at(pick(rng, dirs)), name)
		if os.MkdirAll(filepath.Join(d, "deep"), 0o755) == nil {
			os.WriteFile(filepath.Join(d, "deep", "f"), []byte("deep"), 0o644)
		}
	case 8: // move a directory, then write inside it
		if d := pick(rng, dirs); d != "." {
			to := filepath.Join(at(pick(rng, dirs)), name)
			if os.Rename(at(d), to) == nil {
				os.WriteFile(filepath.Join(to, "after-move"), []byte("x"), 0o644)
			}
		}
	case 9: // delete a directory
		if d := pick(rng, dirs); d != "." {
			os.RemoveAll(at(d))
		}
	case 10: // a symlink, or a file swapped for one
		if f := pick(rng, files); f != "" && rng.IntN(2) == 0 {
			os.Remove(at(f))
			os.Symlink("elsewhere", at(f))
		} else {
			os.Symlink("x0", filepath.Join(at(pick(rng, dirs)), name))
		}
	case 11: // an mmap write, the descriptor closed before the write
		if f := pick(rng, files); f != "" {
			mmapWrite(at(f))
		}
	case 12: // a directory renamed beside itself, to a name that sorts
		// between it and its entries ("d.old" < "d/x")
		if d := pick(rng, dirs); d != "." {
			os.Rename(at(d), at(d)+[]string{".old", "-x", " y", "!"}[rng.IntN(4)])
		}
	case 13: // a file named after a directory, beside it
		if d := pick(rng, dirs); d != "." {
			os.WriteFile(at(d)+".txt", []byte("beside"), 0o644)
		}
	}
}

func mmapWrite(path string) {
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return
	}
	fi, err := fh.Stat()
	if err != nil || fi.Size() == 0 || !fi.Mode().IsRegular() {
		fh.Close()
		return
	}
	b, err := unix.Mmap(int(fh.Fd()), 0, int(fi.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	fh.Close()
	if err != nil {
		return
	}
	b[0] ^= 0xff
	unix.Munmap(b)
}

// TestManyWritesDoNotOverflow: a command writing far more files than the
// kernel queues events for (an npm install) is read as it goes.
func TestManyWritesDoNotOverflow(t *testing.T) {
	root, before, w := watched(t)
	queue := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		fmt.Sscan(string(b), &queue)
	}
	// Each write makes about three events (create, modify, close).
	n := min(queue, 40000)
	for i := range n {
		f, err := os.Create(filepath.Join(root, "a", fmt.Sprintf("many%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("x")
		f.Close()
		if i%1000 == 0 {
			runtime.Gosched()
		}
	}
	patchEqualsWalk(t, "many writes", root, before, w)
}

// TestSecondNameFailsThePatch: a file that has another name (made by a
// process no guard covered) fails the patch rather than be trusted.
func TestSecondNameFailsThePatch(t *testing.T) {
	root, before, w := watched(t)
	if err := os.Link(filepath.Join(root, "a", "x0"), filepath.Join(root, "d", "again")); err != nil {
		t.Fatal(err)
	}
	if _, err := patched(t, root, before, w); !errors.Is(err, manifest.ErrLinked) {
		t.Fatalf("patch after a hard link: %v, want ErrLinked", err)
	}
}

// TestStartFailsOnWhatItCannotWatch: a directory that cannot be watched
// (gone, or swapped for a symlink) fails Start, naming it, and the caller
// walks. (The watch limit fails it the same way: ENOSPC.)
func TestStartFailsOnWhatItCannotWatch(t *testing.T) {
	root := tree(t)
	if _, err := watch.Start(root, []string{"a", "missing"}); err == nil || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("start with a missing directory: %v", err)
	}
	if _, err := watch.Start(root, []string{"link"}); err == nil {
		t.Fatal("start watched a symlink")
	}
}
