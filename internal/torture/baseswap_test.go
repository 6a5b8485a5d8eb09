package torture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBaseSwappedForSymlink: the base's path is made a symlink to the very
// same directory (renamed away) after the transaction opened: the same
// device and inode, reached another way. Whoever can rename entries beside
// the base can do that in a loop, so that a commit opening the base by
// path lands in whatever directory the symlink names at that instant. The
// commit must refuse BaseDrift and write nothing; recover, with an apply
// in flight, must not act through the symlink either.
func TestBaseSwappedForSymlink(t *testing.T) {
	w := newWorld(t)
	check(t, os.WriteFile(filepath.Join(w.base, "a"), []byte("base\n"), 0o644))
	staged := w.open("s1")
	check(t, os.WriteFile(filepath.Join(staged, "a"), []byte("agent\n"), 0o644))
	check(t, os.WriteFile(filepath.Join(staged, "new"), []byte("new\n"), 0o644))
	moved := w.base + ".moved"
	check(t, os.Rename(w.base, moved))
	check(t, os.Symlink(filepath.Base(moved), w.base))
	r := w.airlock("commit", "s1")
	wantRefusal(t, r, "BaseDrift")
	if b, _ := os.ReadFile(filepath.Join(moved, "a")); string(b) != "base\n" {
		t.Fatalf("a holds %q after the refusal", b)
	}
	if _, err := os.Lstat(filepath.Join(moved, "new")); err == nil {
		t.Fatal("the change set was written through the symlink")
	}

	// The same with an apply in flight: killed after one step, the base
	// then swapped. Recover acts only on the very directory the
	// transaction opened, opened without following a symlink: through
	// base.moved (that directory, renamed: the same device and inode) it
	// rolls it back exactly; through the symlink it never writes anywhere
	// else.
	check(t, os.Remove(w.base))
	check(t, os.Rename(moved, w.base))
	r = w.airlockEnv([]string{"AIRLOCK_TEST_FAULT=apply:1"}, "commit", "s1")
	if r.Code != -1 {
		t.Fatalf("the fault point was not reached: %v", r)
	}
	check(t, os.Rename(w.base, moved))
	check(t, os.Symlink(filepath.Base(moved), w.base))
	rr := w.airlock("recover", "--workdir", moved)
	if rr.Code != 0 || !strings.Contains(rr.Stderr, "same directory") {
		t.Fatalf("recover through the base's new path did not recover it: %v", rr)
	}
	if b, _ := os.ReadFile(filepath.Join(moved, "a")); string(b) != "base\n" {
		t.Fatalf("a holds %q after recover through the base's new path", b)
	}
	rr = w.airlock("recover", "--workdir", w.base)
	if rr.Code == 0 && !strings.Contains(rr.Stderr+rr.Stdout, "nothing to recover") {
		t.Fatalf("recover acted through a symlinked base: %v", rr)
	}
	check(t, os.Remove(w.base))
	check(t, os.Rename(moved, w.base))
	w.must("recover", "--workdir", w.base)
	if b, _ := os.ReadFile(filepath.Join(w.base, "a")); string(b) != "base\n" {
		t.Fatalf("a holds %q after recover", b)
	}
	for _, n := range mustReadDir(t, w.base) {
		if n != "a" {
			t.Errorf("%s left in the base after recover", n)
		}
	}
}
