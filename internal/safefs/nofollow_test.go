//go:build linux || darwin

package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenRootNoFollow: a base resolved at open is opened again only as
// the directory it resolved to. A component of its path swapped for a
// symlink (to the very same directory, renamed away) fails, and so does
// the base itself as a symlink; a relative path is refused.
func TestOpenRootNoFollow(t *testing.T) {
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(top, "p", "base")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRootNoFollow(base)
	if err != nil {
		t.Fatalf("plain path: %v", err)
	}
	if _, err := r.Lstat(""); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if err := os.Rename(filepath.Join(top, "p"), filepath.Join(top, "p.moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("p.moved", filepath.Join(top, "p")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRootNoFollow(base); !errors.Is(err, ErrSymlink) {
		t.Fatalf("a parent swapped for a symlink: %v, want ErrSymlink", err)
	}
	if err := os.Symlink(filepath.Join(top, "p.moved", "base"), filepath.Join(top, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRootNoFollow(filepath.Join(top, "link")); !errors.Is(err, ErrSymlink) {
		t.Fatalf("the base itself a symlink: %v, want ErrSymlink", err)
	}
	if _, err := OpenRootNoFollow("relative/base"); err == nil {
		t.Fatal("a relative path was opened")
	}
}
