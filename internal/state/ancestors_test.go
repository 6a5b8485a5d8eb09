package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func wantUnsafeLocation(t *testing.T, err error, root, dir, reason string) {
	t.Helper()
	var le *UnsafeLocationError
	if !errors.As(err, &le) {
		t.Fatalf("want *UnsafeLocationError naming %s, got %v", dir, err)
	}
	if le.Dir != dir || le.Root != root {
		t.Fatalf("refusal names %s (root %s), want %s (root %s): %v", le.Dir, le.Root, dir, root, err)
	}
	msg := err.Error()
	for _, want := range []string{dir, root, reason, "AIRLOCK_STATE_DIR"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("refusal should say %q: %s", want, msg)
		}
	}
}

// mkdirMode makes dir with exactly mode (umask and setuid-style bits
// included) and, when uid >= 0, gives it to uid.
func mkdirMode(t *testing.T, dir string, mode os.FileMode, uid int) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if os.Getuid() != 0 {
			t.Skip("needs root to chown")
		}
		if err := os.Chown(dir, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

// A state root inside a directory another user can rename entries of is
// refused, naming that directory, before anything is created there; a
// sticky directory owned by root or the user (like /tmp) is fine.
func TestOpenRefusesUnsafeLocation(t *testing.T) {
	refused := []struct {
		name   string
		mode   os.FileMode
		uid    int
		reason string
	}{
		{"world-writable", 0o777, -1, "mode 0777"},
		{"group-writable", 0o770, -1, "mode 0770"},
		{"owned by another user", 0o755, nobody, "uid 65534"},
		{"sticky but owned by another user", 0o777 | os.ModeSticky, nobody, "uid 65534"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			unsafe := filepath.Join(t.TempDir(), "shared")
			mkdirMode(t, unsafe, c.mode, c.uid)
			for _, root := range []string{filepath.Join(unsafe, "state"), filepath.Join(unsafe, "a", "b", "state")} {
				_, err := Open(root)
				wantUnsafeLocation(t, err, root, unsafe, c.reason)
				if _, err := os.Lstat(filepath.Join(unsafe, strings.Split(strings.TrimPrefix(root, unsafe+"/"), "/")[0])); err == nil {
					t.Fatalf("Open created %s inside the unsafe %s before refusing", root, unsafe)
				}
			}
			// An existing, otherwise perfect state root is refused too.
			root := filepath.Join(unsafe, "existing")
			mkdirMode(t, root, 0o700, -1)
			_, err := Open(root)
			wantUnsafeLocation(t, err, root, unsafe, c.reason)
		})
	}
	t.Run("reached through a symlink", func(t *testing.T) {
		unsafe := filepath.Join(t.TempDir(), "shared")
		mkdirMode(t, unsafe, 0o777, -1)
		mkdirMode(t, filepath.Join(unsafe, "real"), 0o700, -1)
		link := filepath.Join(t.TempDir(), "link")
		symlink(t, filepath.Join(unsafe, "real"), link)
		root := filepath.Join(link, "state")
		_, err := Open(root)
		wantUnsafeLocation(t, err, root, unsafe, "mode 0777")
	})
	t.Run("symlink inside an unsafe directory", func(t *testing.T) {
		unsafe := filepath.Join(t.TempDir(), "shared")
		mkdirMode(t, unsafe, 0o777, -1)
		symlink(t, t.TempDir(), filepath.Join(unsafe, "link"))
		root := filepath.Join(unsafe, "link", "state")
		_, err := Open(root)
		wantUnsafeLocation(t, err, root, unsafe, "mode 0777")
	})
	t.Run("sticky and owned by root or the user", func(t *testing.T) {
		for _, uid := range []int{-1, 0} {
			sticky := filepath.Join(t.TempDir(), "tmp")
			mkdirMode(t, sticky, 0o777|os.ModeSticky, uid)
			root := filepath.Join(sticky, "state")
			if _, err := Open(root); err != nil {
				t.Fatalf("state root in a sticky directory: %v", err)
			}
		}
	})
}

func TestInitialUIDMap(t *testing.T) {
	for m, want := range map[string]bool{
		"         0          0 4294967295\n": true,
		"      1000       1000          1\n": false,
		"         0       1000          1\n": false,
		"":                                   false,
	} {
		if got := isInitialUIDMap(m); got != want {
			t.Errorf("isInitialUIDMap(%q) = %v, want %v", m, got, want)
		}
	}
}
