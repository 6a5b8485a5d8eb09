package safefs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKernelVersion(t *testing.T) {
	for _, c := range []struct {
		release      string
		major, minor int
		ok           bool
	}{
		{"6.8.0-45-generic", 6, 8, true},
		{"5.7.19", 5, 7, true},
		{"5.10", 5, 10, true},
		{"4.19.0+", 4, 19, true},
		{"6.18rc1", 6, 18, true},
		{"garbage", 0, 0, false},
		{"6.x", 0, 0, false},
	} {
		major, minor, ok := kernelVersion(c.release)
		if ok != c.ok || ok && (major != c.major || minor != c.minor) {
			t.Errorf("kernelVersion(%q) = %d, %d, %v; want %d, %d, %v", c.release, major, minor, ok, c.major, c.minor, c.ok)
		}
	}
}

// TestFSSync flushes a root's file system and a directory's, where this
// machine lets one syncfs stand for fsyncs, and says so where it does not.
func TestFSSync(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := r.FSSync()
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		t.Skipf("one syncfs does not stand for fsyncs on the file system of %s here: callers fsync each file", dir)
	}
	defer s.Close()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	// The handle is a descriptor of its own: closing the root leaves it
	// usable.
	r.Close()
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync after the root was closed: %v", err)
	}
	d, err := OpenFSSync(dir)
	if err != nil || d == nil {
		t.Fatalf("OpenFSSync(%s) = %v, %v; the root's file system took one", dir, d, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}
