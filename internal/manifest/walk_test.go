package manifest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// mkfile writes a file (and its parents) under root and sets its mode
// exactly, past the umask.
func mkfile(t *testing.T, root, rel, content string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, root, rel string, mode fs.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func mklink(t *testing.T, root, rel, target string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func walk(t *testing.T, root string, opts WalkOptions) *Manifest {
	t.Helper()
	m, err := Walk(context.Background(), root, opts)
	if err != nil {
		t.Fatalf("Walk(%s): %v", root, err)
	}
	return m
}

func TestWalkMeasuresEveryKind(t *testing.T) {
	root := t.TempDir()
	const badName = "bad\xffname" // not UTF-8
	const nlName = "new\nline"
	mkfile(t, root, "a.txt", "hello", 0o644)
	mkfile(t, root, "bin/tool", "#!/bin/sh\n", 0o755|fs.ModeSetuid)
	mkdir(t, root, "sticky", 0o777|fs.ModeSticky)
	mkfile(t, root, "sticky/"+badName, "x", 0o600)
	mkfile(t, root, nlName, "two\nlines\n", 0o640)
	mkdir(t, root, "empty", 0o700)
	mklink(t, root, "link", "a.txt")
	mklink(t, root, "dangling", "../nowhere/"+badName)
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}

	m := walk(t, root, WalkOptions{})

	type want struct {
		kind   Kind
		mode   fs.FileMode
		size   int64
		target string
	}
	wants := map[string]want{
		"a.txt":             {KindFile, 0o644, 5, ""},
		"bin":               {KindDir, 0o755, 0, ""},
		"bin/tool":          {KindFile, 0o755 | fs.ModeSetuid, 10, ""},
		"sticky":            {KindDir, 0o777 | fs.ModeSticky, 0, ""},
		"sticky/" + badName: {KindFile, 0o600, 1, ""},
		nlName:              {KindFile, 0o640, 10, ""},
		"empty":             {KindDir, 0o700, 0, ""},
		"link":              {KindSymlink, 0o777, 0, "a.txt"},
		"dangling":          {KindSymlink, 0o777, 0, "../nowhere/" + badName},
		"fifo":              {KindOther, 0o600, 0, ""},
	}
	var paths []string
	for _, e := range m.Entries {
		paths = append(paths, e.Path)
	}
	if !slices.IsSorted(paths) {
		t.Errorf("entries not sorted: %q", paths)
	}
	if len(m.Entries) != len(wants) {
		t.Errorf("got %d entries %q, want %d", len(m.Entries), paths, len(wants))
	}
	for p, w := range wants {
		e, ok := m.Lookup(p)
		if !ok {
			t.Errorf("no entry for %q", p)
			continue
		}
		if e.Kind != w.kind || e.Mode != w.mode || e.Size != w.size || e.Target != w.target {
			t.Errorf("%q: got kind %v mode %v size %d target %q, want %v %v %d %q",
				p, e.Kind, e.Mode, e.Size, e.Target, w.kind, w.mode, w.size, w.target)
		}
		if e.Ino == 0 || e.MtimeNs == 0 || e.CtimeNs == 0 {
			t.Errorf("%q: stat facts missing: %+v", p, *e)
		}
		if e.Digest != "" {
			t.Errorf("%q: digest computed eagerly: %s", p, e.Digest)
		}
		if e.Mode&fs.ModeType != 0 {
			t.Errorf("%q: mode keeps type bits: %v", p, e.Mode)
		}
	}
	if _, ok := m.Lookup(""); ok {
		t.Error("the root itself has an entry")
	}
}

func TestWalkSkipPrunesSubtree(t *testing.T) {
	root := t.TempDir()
	mkfile(t, root, "keep/a", "a", 0o644)
	mkfile(t, root, "node_modules/x/y/z", "z", 0o644)
	mkfile(t, root, "keep/node_modules/q", "q", 0o644)
	mkfile(t, root, "debug.log", "log", 0o644)

	var mu sync.Mutex
	var asked []string
	skip := func(rel string, isDir bool) bool {
		mu.Lock()
		asked = append(asked, rel)
		mu.Unlock()
		return (isDir && filepath.Base(rel) == "node_modules") || strings.HasSuffix(rel, ".log")
	}
	m := walk(t, root, WalkOptions{Skip: skip})
	var got []string
	for _, e := range m.Entries {
		got = append(got, e.Path)
	}
	want := []string{"keep", "keep/a"}
	if !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
	for _, a := range asked {
		if strings.Contains(a, "node_modules/") {
			t.Errorf("Skip was asked about %q beneath a skipped directory: the subtree was visited", a)
		}
	}
}

// TestWalkVanishedEntry deletes entries from inside the walk, through the
// Skip callback, which Walk calls after measuring each listed name: the
// deletion then lands exactly between listing and measuring.
func TestWalkVanishedEntry(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		root := t.TempDir()
		mkfile(t, root, "d/one", "1", 0o644)
		mkfile(t, root, "d/two", "2", 0o644)
		var mu sync.Mutex
		var victim string
		skip := func(rel string, isDir bool) bool {
			mu.Lock()
			defer mu.Unlock()
			// The first of d's two files seen removes the other one,
			// which was listed with it but is not measured yet.
			if victim == "" && (rel == "d/one" || rel == "d/two") {
				victim = "d/one"
				if rel == "d/one" {
					victim = "d/two"
				}
				if err := os.Remove(filepath.Join(root, victim)); err != nil {
					t.Error(err)
				}
			}
			return false
		}
		_, err := Walk(context.Background(), root, WalkOptions{Skip: skip, Workers: 1})
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			t.Fatal("Walk succeeded although a listed file vanished; the manifest would miss it")
		}
		if !strings.Contains(err.Error(), "vanished") || !strings.Contains(err.Error(), filepath.Join(root, victim)) {
			t.Errorf("error %q does not say that %s vanished", err, victim)
		}
	})
	t.Run("dir", func(t *testing.T) {
		root := t.TempDir()
		mkfile(t, root, "sub/deep/f", "f", 0o644)
		skip := func(rel string, isDir bool) bool {
			if rel == "sub" {
				// Measured as a directory, gone before it is read.
				if err := os.RemoveAll(filepath.Join(root, "sub")); err != nil {
					t.Error(err)
				}
			}
			return false
		}
		_, err := Walk(context.Background(), root, WalkOptions{Skip: skip})
		if err == nil || !strings.Contains(err.Error(), "vanished") || !strings.Contains(err.Error(), filepath.Join(root, "sub")) {
			t.Fatalf("Walk error = %v, want one saying %s vanished", err, filepath.Join(root, "sub"))
		}
	})
}

func TestWalkMissingRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "nope")
	_, err := Walk(context.Background(), root, WalkOptions{})
	if err == nil || !strings.Contains(err.Error(), root) {
		t.Fatalf("Walk of a missing root: %v, want an error naming it", err)
	}
}

func TestWalkCancelled(t *testing.T) {
	root := t.TempDir()
	mkfile(t, root, "a/b", "b", 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Walk(ctx, root, WalkOptions{}); err == nil {
		t.Fatal("Walk with a cancelled context returned a manifest")
	}
}

func TestWalkDeepTree(t *testing.T) {
	// Deeper than the worker count: a walk that held a slot while waiting
	// for its children would deadlock here.
	root := t.TempDir()
	rel := strings.Repeat("d/", 40) + "leaf"
	mkfile(t, root, rel, "x", 0o644)
	m := walk(t, root, WalkOptions{Workers: 2})
	if len(m.Entries) != 41 {
		t.Fatalf("got %d entries, want 41", len(m.Entries))
	}
	if e, ok := m.Lookup(rel); !ok || e.Kind != KindFile {
		t.Fatalf("leaf %q not found as a file", rel)
	}
}

func TestLstatDoesNotFollow(t *testing.T) {
	root := t.TempDir()
	mkfile(t, root, "f", "content", 0o644)
	mklink(t, root, "l", "f")
	e, err := Lstat(filepath.Join(root, "l"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != KindSymlink || e.Target != "f" || e.Size != 0 {
		t.Fatalf("Lstat(symlink) = %+v", e)
	}
	if _, err := Lstat(filepath.Join(root, "missing")); !os.IsNotExist(err) {
		t.Fatalf("Lstat(missing) error = %v, want not-exist", err)
	}
}

func TestHashFileRefusesSymlink(t *testing.T) {
	root := t.TempDir()
	mkfile(t, root, "f", "content", 0o644)
	mklink(t, root, "l", "f")
	d, err := HashFile(filepath.Join(root, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if d != HashBytes([]byte("content")) {
		t.Errorf("HashFile = %s, want %s", d, HashBytes([]byte("content")))
	}
	if _, err := HashFile(filepath.Join(root, "l")); err == nil {
		t.Error("HashFile followed a symlink")
	}
}

func TestIsGitMeta(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{".git", true},
		{".git/HEAD", true},
		{".git/objects/ab/cdef", true},
		{"sub/.git", true},
		{"sub/.git/index", true},
		{"a/b/.git/x/y", true},
		{".gitignore", false},
		{".github/workflows/ci.yml", false},
		{"x.git", false},
		{"sub/x.git/HEAD", false},
		{".git2/HEAD", false},
		{"git", false},
		{"", false},
		{"a/.gitkeep", false},
		{".GIT", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := IsGitMeta(tt.path); got != tt.want {
				t.Errorf("IsGitMeta(%q) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}
