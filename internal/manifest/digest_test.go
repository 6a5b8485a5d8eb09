package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// contentByPath returns a content function that serves fixed digests.
func contentByPath(d map[string]string) func(*Entry) (string, error) {
	return func(e *Entry) (string, error) {
		v, ok := d[e.Path]
		if !ok {
			return "", errors.New("no content for " + e.Path)
		}
		return v, nil
	}
}

func treeDigest(t *testing.T, entries []Entry, content map[string]string) string {
	t.Helper()
	d, err := TreeDigest(entries, contentByPath(content))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sampleTree() ([]Entry, map[string]string) {
	entries := []Entry{
		{Path: "a", Kind: KindDir, Mode: 0o755},
		{Path: "a/f", Kind: KindFile, Mode: 0o644},
		{Path: "l", Kind: KindSymlink, Mode: 0o777, Target: "a/f"},
		{Path: "x", Kind: KindFile, Mode: 0o600},
	}
	content := map[string]string{"a/f": HashBytes([]byte("f")), "x": HashBytes([]byte("x"))}
	return entries, content
}

func TestHashBytes(t *testing.T) {
	s := sha256.Sum256([]byte("abc"))
	want := "sha256:" + hex.EncodeToString(s[:])
	if got := HashBytes([]byte("abc")); got != want {
		t.Errorf("HashBytes = %s, want %s", got, want)
	}
	if got, _ := HashReader(strings.NewReader("abc")); got != want {
		t.Errorf("HashReader = %s, want %s", got, want)
	}
}

func TestTreeDigestStable(t *testing.T) {
	e1, c := sampleTree()
	e2, _ := sampleTree()
	// Stat facts that do not change what a commit applies must not count.
	for i := range e2 {
		e2[i].MtimeNs, e2[i].CtimeNs, e2[i].Ino, e2[i].Dev = 99, 98, 97, 96
	}
	a, b := treeDigest(t, e1, c), treeDigest(t, e2, c)
	if a != b {
		t.Errorf("same tree, different digests: %s %s", a, b)
	}
	if !strings.HasPrefix(a, DigestPrefix) {
		t.Errorf("digest %s lacks %s", a, DigestPrefix)
	}
}

func TestTreeDigestSensitive(t *testing.T) {
	base, content := sampleTree()
	want := treeDigest(t, base, content)
	tests := []struct {
		name string
		edit func([]Entry, map[string]string) ([]Entry, map[string]string)
	}{
		{"content", func(e []Entry, c map[string]string) ([]Entry, map[string]string) {
			c["x"] = HashBytes([]byte("y"))
			return e, c
		}},
		{"file mode", func(e []Entry, c map[string]string) ([]Entry, map[string]string) {
			e[3].Mode = 0o644
			return e, c
		}},
		{"setuid", func(e []Entry, c map[string]string) ([]Entry, map[string]string) {
			e[3].Mode |= fs.ModeSetuid
			return e, c
		}},
		{"dir mode", func(e []Entry, c map[string]string) ([]Entry, map[string]string) {
			e[0].Mode = 0o700
			return e, c
		}},
		{"kind", func(e []Entry, c map[string]string) ([]Entry, map[string]string) {
			e[3].Kind = KindDir
			return e, c
		}},
		{"symlink target", func(e []Entry, c map[string]string) ([]Entry, map[string]string) {
			e[2].Target = "x"
			return e, c
		}},
		{"path", func(e []Entry, c map[string]string) ([]Entry, map[string]string) {
			e[3].Path = "y"
			c["y"] = c["x"]
			return e, c
		}},
		{"entry removed", func(e []Entry, c map[string]string) ([]Entry, map[string]string) {
			return e[:3], c
		}},
		{"entry added", func(e []Entry, c map[string]string) ([]Entry, map[string]string) {
			return append(e, Entry{Path: "z", Kind: KindDir, Mode: 0o755}), c
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, c := sampleTree()
			e, c = tt.edit(e, c)
			if got := treeDigest(t, e, c); got == want {
				t.Errorf("digest did not change when the %s changed", tt.name)
			}
		})
	}
}

func TestTreeDigestIgnores(t *testing.T) {
	base, content := sampleTree()
	want := treeDigest(t, base, content)
	tests := []struct {
		name  string
		extra []Entry
	}{
		{"git dir", []Entry{{Path: ".git", Kind: KindDir, Mode: 0o755}, {Path: ".git/HEAD", Kind: KindFile, Mode: 0o644}}},
		{"nested git", []Entry{{Path: "a/.git", Kind: KindFile, Mode: 0o644}}},
		{"fifo", []Entry{{Path: "p", Kind: KindOther, Mode: 0o600}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, c := sampleTree()
			e = append(e, tt.extra...)
			// content is never asked for ignored entries: it has none
			// for them and would fail.
			if got := treeDigest(t, e, c); got != want {
				t.Errorf("digest changed by %s entries", tt.name)
			}
		})
	}
	t.Run("symlink mode", func(t *testing.T) {
		e, c := sampleTree()
		e[2].Mode = 0o755
		if got := treeDigest(t, e, c); got != want {
			t.Error("digest depends on a symlink's mode, which Linux cannot set")
		}
	})
}

func TestTreeDigestContentError(t *testing.T) {
	e, _ := sampleTree()
	if _, err := TreeDigest(e, contentByPath(nil)); err == nil {
		t.Fatal("TreeDigest hid the content function's error")
	}
}

// TestTreeDigestOfWalk ties Walk and TreeDigest together on a real tree:
// a copy of the tree digests alike, a one-byte edit does not.
func TestTreeDigestOfWalk(t *testing.T) {
	digestOf := func(root string) string {
		t.Helper()
		m := walk(t, root, WalkOptions{})
		d, err := TreeDigest(m.Entries, func(e *Entry) (string, error) {
			return HashFile(filepath.Join(root, filepath.FromSlash(e.Path)))
		})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	build := func(root string) {
		mkfile(t, root, "src/main.go", "package main\n", 0o644)
		mkfile(t, root, "run.sh", "#!/bin/sh\n", 0o755)
		mklink(t, root, "latest", "src/main.go")
		mkfile(t, root, ".git/index", "idx", 0o644)
		if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, b := t.TempDir(), t.TempDir()
	build(a)
	build(b)
	if err := os.WriteFile(filepath.Join(b, ".git", "index"), []byte("other index"), 0o644); err != nil {
		t.Fatal(err)
	}
	if digestOf(a) != digestOf(b) {
		t.Fatal("two equal trees (git metadata aside) digest differently")
	}
	if err := os.WriteFile(filepath.Join(b, "run.sh"), []byte("#!/bin/sh!"), 0o755); err != nil {
		t.Fatal(err)
	}
	if digestOf(a) == digestOf(b) {
		t.Fatal("an edited file did not change the tree digest")
	}
}
