package safefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestMoveIn: a file moved in from a directory outside the root lands
// beneath the root, never over an existing entry, never through a symlink
// on the way; the file outside is moved, not copied.
func TestMoveIn(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base, outside := newRootWithOutside(t)
		store := filepath.Join(filepath.Dir(base), "store")
		must(t, os.Mkdir(store, 0o700))
		must(t, os.Mkdir(filepath.Join(base, "d"), 0o755))
		must(t, os.Symlink(outside, filepath.Join(base, "link")))
		must(t, os.WriteFile(filepath.Join(base, "d", "taken"), []byte("theirs"), 0o644))
		dir, err := os.Open(store)
		must(t, err)
		defer dir.Close()
		put := func(name string) {
			t.Helper()
			must(t, os.WriteFile(filepath.Join(store, name), []byte("object "+name), 0o600))
		}

		put("a")
		must(t, r.MoveIn(dir, "a", "d/new"))
		if b, err := os.ReadFile(filepath.Join(base, "d", "new")); err != nil || string(b) != "object a" {
			t.Fatalf("d/new = %q, %v", b, err)
		}
		if _, err := os.Lstat(filepath.Join(store, "a")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the object is still in the store after the move: %v", err)
		}

		put("b")
		if err := r.MoveIn(dir, "b", "d/taken"); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("MoveIn over an existing entry = %v, want fs.ErrExist", err)
		}
		if b, _ := os.ReadFile(filepath.Join(base, "d", "taken")); string(b) != "theirs" {
			t.Fatalf("d/taken was replaced: %q", b)
		}

		if err := r.MoveIn(dir, "b", "link/x"); !errors.Is(err, ErrSymlink) && !errors.Is(err, ErrEscape) {
			t.Fatalf("MoveIn through a symlink = %v, want it refused", err)
		}
		if _, err := os.Lstat(filepath.Join(outside, "x")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("MoveIn wrote through the symlink outside the root: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(store, "b")); err != nil {
			t.Fatalf("a refused move lost the object: %v", err)
		}
	})
}

// TestAdopts: a plain directory adopts a moved file; a setgid one does
// not (a file created there would take its group).
func TestAdopts(t *testing.T) {
	r, base, _ := newRootWithOutside(t)
	must(t, os.Mkdir(filepath.Join(base, "plain"), 0o755))
	must(t, os.Mkdir(filepath.Join(base, "sgid"), 0o755))
	must(t, os.Chmod(filepath.Join(base, "sgid"), 0o755|fs.ModeSetgid))
	for dir, want := range map[string]bool{"": true, "plain": true, "sgid": false} {
		if got, err := r.Adopts(dir); err != nil || got != want {
			t.Errorf("Adopts(%q) = %v, %v; want %v", dir, got, err, want)
		}
	}
}
