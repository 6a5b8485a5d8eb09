package airlock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/testbin"
)

// mounted reports whether path is a mount point in this process's view.
func mounted(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		testbin.Missing(t, "cannot read /proc/self/mountinfo (is /proc mounted?): %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

// TestOverlayCommit runs a whole transaction on the overlay backend: the
// change set comes from the upper layer, the commit applies into the base
// (the lower layer) while the overlay is still mounted, and settling
// unmounts before anything is removed.
func TestOverlayCommit(t *testing.T) {
	s := newStore(t)
	must(t, os.MkdirAll(s.Dir(), 0o700))
	if ok, why := stage.ProbeOverlay(s.Dir()); !ok {
		testbin.Missing(t, "overlay: %s", why)
	}
	base := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(base, "src"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "src/a.go"), []byte("package a\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "old.txt"), []byte("old\n"), 0o644))
	// An overlay stages nothing at open: the commit trusts a base file's
	// stat only when its ctime is older than the open by the clock's
	// window (a change in the step the open was made in may have come
	// after it, and is refused as drift). The base is the user's, written
	// well before the transaction.
	_, clock := s.clocks(base)
	testbin.PastWindow(t, base, clock.WindowNs(), filepath.Join(base, "src/a.go"), filepath.Join(base, "old.txt"))
	tx, err := s.Open(t.Context(), OpenOptions{Base: base, Backend: "overlay"})
	must(t, err)
	if tx.Record().Backend != "overlay" || !mounted(t, tx.Path()) {
		t.Fatalf("backend %s, mounted %v", tx.Record().Backend, mounted(t, tx.Path()))
	}
	must(t, os.WriteFile(filepath.Join(tx.Path(), "src/a.go"), []byte("package a // edited\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(tx.Path(), "new.txt"), []byte("new\n"), 0o644))
	must(t, os.Remove(filepath.Join(tx.Path(), "old.txt")))
	if b, _ := os.ReadFile(filepath.Join(base, "src/a.go")); string(b) != "package a\n" {
		t.Fatal("a write in the overlay reached the base before commit")
	}
	res, err := tx.Commit(t.Context(), CommitOptions{})
	must(t, err)
	if res.Outcome != Committed || res.Added != 1 || res.Modified != 1 || res.Deleted != 1 {
		t.Fatalf("commit: %s +%d ~%d -%d, want committed +1 ~1 -1", res.Outcome, res.Added, res.Modified, res.Deleted)
	}
	for p, want := range map[string]string{"src/a.go": "package a // edited\n", "new.txt": "new\n"} {
		if b, _ := os.ReadFile(filepath.Join(base, p)); string(b) != want {
			t.Errorf("%s in the base: %q, want %q", p, b, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(base, "old.txt")); !os.IsNotExist(err) {
		t.Errorf("old.txt still in the base: %v", err)
	}
	if mounted(t, tx.Path()) {
		t.Error("the overlay is still mounted after the commit")
	}
	if _, err := os.Lstat(tx.Path()); !os.IsNotExist(err) {
		t.Errorf("staged path still there after the commit: %v", err)
	}
}

// TestAutoNeverOverlay: whatever this machine supports, auto resolves to a
// backend with snapshot isolation.
func TestAutoNeverOverlay(t *testing.T) {
	s := newStore(t)
	tx, err := s.Open(t.Context(), OpenOptions{Base: t.TempDir(), Backend: "auto"})
	must(t, err)
	if b := tx.Record().Backend; b != "copy" && b != "reflink" {
		t.Fatalf("auto opened with %s, want copy or reflink", b)
	}
	_, err = tx.Discard(t.Context(), DiscardOptions{})
	must(t, err)
}
