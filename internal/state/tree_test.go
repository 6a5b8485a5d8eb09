package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// journalTree lays out a journal as the apply writes it: the journal file,
// backups, and a displaced file and symlink kept aside by a restore.
func journalTree(t *testing.T, tx *Tx) string {
	t.Helper()
	j := tx.Path("journal")
	for _, d := range []string{j, filepath.Join(j, "backup"), filepath.Join(j, "displaced")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"journal.json", "backup/000000", "backup/000001", "displaced/000000"} {
		if err := os.WriteFile(filepath.Join(j, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, "/etc/passwd", filepath.Join(j, "displaced", "000001"))
	return j
}

func TestCheckTree(t *testing.T) {
	t.Run("as airlock writes it", func(t *testing.T) {
		tx := newTx(t)
		journalTree(t, tx)
		if err := tx.CheckTree("journal", "displaced"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		tx := newTx(t)
		if err := tx.CheckTree("journal", "displaced"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("CheckTree of a missing journal = %v, want fs.ErrNotExist", err)
		}
	})
	cases := []struct {
		name   string
		victim string // relative to the journal
		plant  func(t *testing.T, path string)
		reason string
	}{
		{"journal directory is a symlink", ".", func(t *testing.T, p string) {
			elsewhere := filepath.Join(t.TempDir(), "j")
			if err := os.Rename(p, elsewhere); err != nil {
				t.Fatal(err)
			}
			symlink(t, elsewhere, p)
		}, "symlink"},
		{"journal file is a symlink", "journal.json", relink, "symlink"},
		{"backup is a symlink", "backup/000001", relink, "symlink"},
		{"backup directory is a symlink", "backup", relink, "symlink"},
		{"symlink outside the kept content", "backup/000002", func(t *testing.T, p string) { symlink(t, "/etc/shadow", p) }, "symlink"},
		{"backup is a FIFO", "backup/000002", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "FIFO"},
		{"journal directory is world-writable", ".", chmod(0o777), "mode 0777"},
		{"backup directory is group-writable", "backup", chmod(0o770), "mode 0770"},
		{"backup is group-writable", "backup/000000", chmod(0o620), "mode 0620"},
		{"journal file is world-writable", "journal.json", chmod(0o666), "mode 0666"},
		{"journal directory owned by another user", ".", chown, "uid 65534"},
		{"journal file owned by another user", "journal.json", chown, "uid 65534"},
		{"backup owned by another user", "backup/000001", chown, "uid 65534"},
		{"kept symlink owned by another user", "displaced/000001", chown, "uid 65534"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx := newTx(t)
			j := journalTree(t, tx)
			victim := filepath.Join(j, c.victim)
			c.plant(t, victim)
			err := tx.CheckTree("journal", "displaced")
			wantUnsafe(t, err, filepath.Clean(victim))
			if !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("refusal should say %q: %v", c.reason, err)
			}
		})
	}
}

// relink moves the file or directory at p elsewhere and leaves a symlink
// to it in its place: same content, reached through a symlink.
func relink(t *testing.T, p string) {
	t.Helper()
	elsewhere := filepath.Join(t.TempDir(), filepath.Base(p))
	if err := os.Rename(p, elsewhere); err != nil {
		t.Fatal(err)
	}
	symlink(t, elsewhere, p)
}

func chmod(mode os.FileMode) func(t *testing.T, p string) {
	return func(t *testing.T, p string) {
		t.Helper()
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func chown(t *testing.T, p string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to chown")
	}
	if err := os.Lchown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}
