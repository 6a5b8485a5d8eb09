package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantUnsafe(t *testing.T, err error, path string) {
	t.Helper()
	var ue *UnsafeError
	if !errors.As(err, &ue) {
		t.Fatalf("want *UnsafeError naming %s, got %v", path, err)
	}
	if ue.Path != path {
		t.Fatalf("UnsafeError names %s, want %s (%v)", ue.Path, path, err)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "remove it") {
		t.Fatalf("message should name %s and say what to do: %s", path, msg)
	}
}

func TestDefaultDir(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name, airlock, xdg, want string
	}{
		{"airlock wins", "/s/airlock-state", "/x", "/s/airlock-state"},
		{"airlock is cleaned", "/s//airlock-state/", "/x", "/s/airlock-state"},
		{"xdg", "", "/x/state", "/x/state/airlock"},
		{"relative xdg is ignored", "", "x/state", filepath.Join(home, ".local/state/airlock")},
		{"home", "", "", filepath.Join(home, ".local/state/airlock")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HOME", home)
			t.Setenv("AIRLOCK_STATE_DIR", tt.airlock)
			t.Setenv("XDG_STATE_HOME", tt.xdg)
			got, err := DefaultDir()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("DefaultDir() = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestDefaultDirRefusesRelative: a relative AIRLOCK_STATE_DIR names
// another state root from every working directory, so it is refused,
// naming the variable and what to set instead.
func TestDefaultDirRefusesRelative(t *testing.T) {
	for _, d := range []string{"rel", "./state", "~/state", "../s"} {
		t.Run(d, func(t *testing.T) {
			t.Setenv("AIRLOCK_STATE_DIR", d)
			t.Setenv("XDG_STATE_HOME", "/x")
			got, err := DefaultDir()
			if err == nil {
				t.Fatalf("DefaultDir() = %s, want an error", got)
			}
			for _, want := range []string{"AIRLOCK_STATE_DIR", d, "absolute path"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestOpenCreatesPrivateDirs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "airlock")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dir() != dir {
		t.Fatalf("Dir() = %s, want %s", s.Dir(), dir)
	}
	for _, p := range []string{dir, filepath.Dir(dir), filepath.Join(dir, "tx"), filepath.Join(dir, "bases")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o700 {
			t.Errorf("%s has mode %04o, want 0700", p, perm)
		}
	}
	if _, err := Open(dir); err != nil {
		t.Fatalf("reopen: %v", err)
	}
}

func TestOpenRefusesUnsafeRoot(t *testing.T) {
	t.Run("group writable", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o770)
		_, err := Open(dir)
		wantUnsafe(t, err, dir)
	})
	t.Run("symlink", func(t *testing.T) {
		real := t.TempDir()
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Symlink(real, dir); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		wantUnsafe(t, err, dir)
	})
	t.Run("symlinked tx dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		tx := filepath.Join(dir, "tx")
		if err := os.Symlink(t.TempDir(), tx); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		wantUnsafe(t, err, tx)
	})
	t.Run("foreign owner", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to chown")
		}
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		wantUnsafe(t, err, dir)
		if !strings.Contains(err.Error(), "uid 12345") {
			t.Fatalf("message should name the owner: %v", err)
		}
	})
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"20261129-190233-4f2a", true},
		{"a", true},
		{"A.b_c-9", true},
		{strings.Repeat("x", 64), true},
		{strings.Repeat("x", 65), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"a/b", false},
		{"../x", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			err := ValidID(tt.id)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidID(%q) = %v, want ok=%v", tt.id, err, tt.ok)
			}
			if err != nil && (!strings.Contains(err.Error(), "A-Z a-z 0-9") || !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.id))) {
				t.Fatalf("error should name the id and the rule: %v", err)
			}
		})
	}
}

func TestNewID(t *testing.T) {
	now := time.Date(2026, 11, 29, 20, 2, 33, 0, time.FixedZone("x", 3600))
	re := regexp.MustCompile(`^20261129-190233-[0-9a-f]{4}$`)
	seen := map[string]bool{}
	for range 20 {
		id := NewID(now)
		if !re.MatchString(id) {
			t.Fatalf("NewID = %q, want UTC date-time and 4 hex digits", id)
		}
		if err := ValidID(id); err != nil {
			t.Fatal(err)
		}
		seen[id] = true
	}
	if len(seen) < 2 {
		t.Fatalf("20 NewID calls gave %d distinct ids", len(seen))
	}
}

func TestCreateTxIDs(t *testing.T) {
	s := openStore(t)
	for _, id := range []string{"b", "a", "c"} {
		tx, err := s.Create(id)
		if err != nil {
			t.Fatal(err)
		}
		if tx.ID() != id || tx.Dir() != filepath.Join(s.Dir(), "tx", id) {
			t.Fatalf("tx %s at %s", tx.ID(), tx.Dir())
		}
		fi, err := os.Stat(tx.Dir())
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("tx dir: %v %v", fi, err)
		}
	}
	_, err := s.Create("a")
	if err == nil || !strings.Contains(err.Error(), "transaction id a already exists") {
		t.Fatalf("second Create: %v", err)
	}
	if _, err := s.Create("../x"); err == nil {
		t.Fatal("Create accepted an invalid id")
	}
	// Not an id airlock could have made: not listed.
	os.Mkdir(filepath.Join(s.Dir(), "tx", "bad name"), 0o700)
	ids, err := s.IDs()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("IDs() = %v", ids)
	}
	if _, err := s.Tx("b"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Tx("zz")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "transaction zz not found") {
		t.Fatalf("Tx(missing) = %v", err)
	}
}

func TestTxRefusesUnsafeDir(t *testing.T) {
	s := openStore(t)
	tx, err := s.Create("t1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tx.Dir(), 0o770); err != nil {
		t.Fatal(err)
	}
	_, err = s.Tx("t1")
	wantUnsafe(t, err, tx.Dir())
	// A handle opened earlier refuses too: every use re-checks.
	wantUnsafe(t, tx.Write("x.json", 1), tx.Dir())
	wantUnsafe(t, s.RemoveTx("t1"), tx.Dir())
	if _, err := os.Stat(tx.Dir()); err != nil {
		t.Fatal("RemoveTx acted on unsafe state")
	}

	link := filepath.Join(s.Dir(), "tx", "t2")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	_, err = s.Tx("t2")
	wantUnsafe(t, err, link)
}

func TestRemoveTx(t *testing.T) {
	s := openStore(t)
	tx, err := s.Create("gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WriteOnce("open.json", map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	ro := tx.Path("staged/ro")
	if err := os.MkdirAll(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ro, "f"), []byte("x"), 0o400)
	os.Chmod(ro, 0o500)
	// A leftover of an interrupted removal is swept too.
	leftover := filepath.Join(s.Dir(), "trash", "old.1234")
	if err := os.MkdirAll(filepath.Join(leftover, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveTx("gone"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tx.Dir(), leftover} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s still there: %v", p, err)
		}
	}
	if err := s.RemoveTx("gone"); err != nil {
		t.Fatalf("removing a missing tx: %v", err)
	}
	if ids, _ := s.IDs(); len(ids) != 0 {
		t.Fatalf("IDs after RemoveTx: %v", ids)
	}
}

func TestNested(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/", "/a/b", true},
		{"/a/b", "/a/b/c", true},
		{"/a/b/c", "/a/b", true},
		{"/a/b", "/a/bc", false},
		{"/a/bc", "/a/b", false},
		{"/a/b", "/a/c", false},
		{"/", "/a", true},
		{"/a", "/", true},
		{"/a/./b/../b", "/a/b/x", true},
		{"/a/b/..", "/a/c", true},
	}
	for _, tt := range tests {
		t.Run(tt.a+"|"+tt.b, func(t *testing.T) {
			if got := Nested(tt.a, tt.b); got != tt.want {
				t.Fatalf("Nested(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}
