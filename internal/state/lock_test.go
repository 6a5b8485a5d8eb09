package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lock file that is not the private regular file airlock made must be
// refused before it is opened for locking: a symlink would be followed to
// whatever it names (creating it if missing), and a lock another user can
// open is one they can hold against every commit.
func TestLockRefusesUnsafeLockFile(t *testing.T) {
	cases := []struct {
		name   string
		plant  func(t *testing.T, lock string)
		reason string
	}{
		{"symlink to a file", func(t *testing.T, lock string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			symlink(t, target, lock)
		}, "symlink"},
		{"dangling symlink", func(t *testing.T, lock string) {
			symlink(t, filepath.Join(t.TempDir(), "created-by-follow"), lock)
		}, "symlink"},
		{"directory", func(t *testing.T, lock string) {
			if err := os.Mkdir(lock, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "directory"},
		{"world-readable", func(t *testing.T, lock string) { plantFile(t, lock, 0o644, -1) }, "0644"},
		{"group-writable", func(t *testing.T, lock string) { plantFile(t, lock, 0o620, -1) }, "0620"},
		{"second hard link", func(t *testing.T, lock string) {
			other := filepath.Join(t.TempDir(), "other-name")
			if err := os.WriteFile(other, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(other, lock); err != nil {
				t.Fatal(err)
			}
		}, "hard links"},
		{"foreign owner", func(t *testing.T, lock string) { plantFile(t, lock, 0o600, nobody) }, "uid 65534"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, b := newBase(t)
			tx, err := s.Create("t1")
			if err != nil {
				t.Fatal(err)
			}
			locks := map[string]func() (func(), error){
				tx.Path("lock"):                func() (func(), error) { return tx.Lock(t.Context()) },
				filepath.Join(s.Dir(), "lock"): func() (func(), error) { return s.LockGlobal(t.Context()) },
				filepath.Join(b.Dir(), "lock"): func() (func(), error) { return b.Lock(t.Context()) },
			}
			for lock, take := range locks {
				c.plant(t, lock)
				target, _ := os.Readlink(lock)
				unlock, err := take()
				if err == nil {
					unlock()
					t.Fatalf("lock %s accepted", lock)
				}
				wantUnsafe(t, err, lock)
				if !strings.Contains(err.Error(), c.reason) {
					t.Fatalf("refusal of %s should say %q: %v", lock, c.reason, err)
				}
				if target != "" && strings.Contains(target, "created-by-follow") {
					if _, err := os.Lstat(target); err == nil {
						t.Fatalf("locking followed the symlink %s and created %s", lock, target)
					}
				}
			}
		})
	}
}

// nobody is a uid no test process runs as.
const nobody = 65534

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// plantFile creates path with perm (umask aside) and, when uid >= 0, gives
// it to uid, which needs root.
func plantFile(t *testing.T, path string, perm os.FileMode, uid int) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	if uid >= 0 {
		if os.Getuid() != 0 {
			t.Skip("needs root to chown")
		}
		if err := os.Chown(path, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}
