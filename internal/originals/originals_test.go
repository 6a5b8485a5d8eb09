package originals

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/testbin"
)

// keep writes content to a temporary file and adds it as the original of
// path with the given stat facts.
func keep(t *testing.T, s *Store, path, content string, ino uint64) manifest.Entry {
	t.Helper()
	src := filepath.Join(t.TempDir(), "backup")
	if err := os.WriteFile(src, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	e := manifest.Entry{Path: path, Kind: manifest.KindFile, Mode: 0o644, Size: int64(len(content)),
		MtimeNs: 1, CtimeNs: 2, Ino: ino, Dev: 9, Digest: manifest.HashBytes([]byte(content))}
	if err := s.Add("tx1", e, src); err != nil {
		t.Fatalf("Add %s: %v", path, err)
	}
	if _, err := os.Lstat(src); !os.IsNotExist(err) {
		t.Errorf("Add left its source %s behind (err %v)", src, err)
	}
	return e
}

func read(t *testing.T, s *Store, d string) string {
	t.Helper()
	f, err := s.Open(d)
	if err != nil {
		t.Fatalf("Open %s: %v", d, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLookupByStatFacts(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := keep(t, s, "src/a.go", "version 1\n", 100)
	b := keep(t, s, "src/a.go", "version 2\n", 101)

	for _, tc := range []struct {
		name string
		e    manifest.Entry
		want string
	}{
		{"first version by its stat", a, "version 1\n"},
		{"second version by its stat", b, "version 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.e
			q.Digest = "" // a manifest entry at open has no digest
			d, ok := s.Lookup(q)
			if !ok {
				t.Fatal("not found")
			}
			if got := read(t, s, d); got != tc.want {
				t.Errorf("content %q, want %q", got, tc.want)
			}
		})
	}
	other := a
	other.Ino = 555
	if _, ok := s.Lookup(other); ok {
		t.Error("Lookup matched an entry whose inode differs: stat facts must all agree")
	}
	elsewhere := a
	elsewhere.Path = "src/b.go"
	if _, ok := s.Lookup(elsewhere); ok {
		t.Error("Lookup matched another path")
	}

	// A second store over the same directory reads the index from disk.
	s2, err := Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := s2.Lookup(a); !ok || read(t, s2, d) != "version 1\n" {
		t.Error("a reopened store does not find what was kept")
	}
}

func TestMissingObjectIsNoAncestor(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := keep(t, s, "f", "x", 1)
	if err := os.Remove(s.ObjectPath(a.Digest)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Lookup(a); ok {
		t.Error("Lookup returned an original whose bytes are gone")
	}
}

func TestTornIndexLineIsSkipped(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := keep(t, s, "f", "x", 1)
	f, err := os.OpenFile(filepath.Join(s.Dir(), indexFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"entry":{"path":"g","ki`) // a crash mid-append
	f.Close()
	s2, _ := Open(s.Dir())
	if _, ok := s2.Lookup(a); !ok {
		t.Error("a torn last line hid the records before it")
	}
}

func TestPrune(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := keep(t, s, "a", "aaaa", 1)
	b := keep(t, s, "b", "bb", 2)
	freed, err := s.Prune(func(r Record) bool { return r.Entry.Path == "a" })
	if err != nil {
		t.Fatal(err)
	}
	if freed != 2 {
		t.Errorf("freed %d bytes, want 2 (b's object)", freed)
	}
	if !s.Has(a.Digest) || s.Has(b.Digest) {
		t.Errorf("after prune: has a %v (want true), has b %v (want false)", s.Has(a.Digest), s.Has(b.Digest))
	}
	if _, ok := s.Lookup(b); ok {
		t.Error("a pruned record is still found")
	}
	if _, ok := s.Lookup(a); !ok {
		t.Error("a kept record is no longer found")
	}
}

func TestMalformedDigestsAreRefused(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", "sha256:", "sha256:../../etc/passwd", "md5:abc", "sha256:" + string(make([]byte, 64))} {
		if s.Has(d) {
			t.Errorf("Has(%q) = true", d)
		}
		if _, err := s.Open(d); err == nil {
			t.Errorf("Open(%q) succeeded", d)
		}
	}
	e := manifest.Entry{Path: "x", Kind: manifest.KindFile, Digest: "sha256:zz"}
	if err := s.Add("tx", e, "/nonexistent"); err == nil {
		t.Error("Add accepted an entry without a valid digest")
	}
}

// An object swapped for a symlink or a FIFO is refused, not followed or
// blocked on: its bytes are what undo writes into the base.
func TestOpenRefusesIrregularObject(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "originals"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ensure(); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func(p string) error{
		"symlink": func(p string) error { return os.Symlink("/etc/passwd", p) },
		"fifo":    func(p string) error { return syscall.Mkfifo(p, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			d := manifest.HashBytes([]byte(name))
			if err := plant(s.ObjectPath(d)); err != nil {
				t.Fatal(err)
			}
			f, err := s.Open(d)
			if err == nil {
				f.Close()
				t.Fatalf("Open of a %s object succeeded", name)
			}
			if !strings.Contains(err.Error(), s.ObjectPath(d)) {
				t.Fatalf("refusal should name %s: %v", s.ObjectPath(d), err)
			}
		})
	}
}

// TestAddAcrossFileSystemsKeepsHoles adds a sparse backup that lives on
// another file system than the store (a tmpfs), so that Add copies it
// instead of renaming it: the kept original holds the same bytes in about
// as little disk.
func TestAddAcrossFileSystemsKeepsHoles(t *testing.T) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != 0x01021994 { // TMPFS_MAGIC
		testbin.Missing(t, "no tmpfs at /dev/shm to hold the backup on another file system")
	}
	mem, err := os.MkdirTemp("/dev/shm", "airlock-originals-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(mem)
	src := filepath.Join(mem, "backup")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	const size = 16 << 20
	if _, err := f.WriteAt([]byte("data in the middle"), size/2); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	content := make([]byte, size)
	copy(content[size/2:], "data in the middle")
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := manifest.Entry{Path: "img", Kind: manifest.KindFile, Mode: 0o644, Size: size, MtimeNs: 1, CtimeNs: 2, Ino: 7, Dev: 9, Digest: manifest.HashBytes(content)}
	if err := s.Add("tx1", e, src); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s, e.Digest); got != string(content) {
		t.Fatal("the kept original does not hold the backup's bytes")
	}
	var kept syscall.Stat_t
	if err := syscall.Stat(s.ObjectPath(e.Digest), &kept); err != nil {
		t.Fatal(err)
	}
	if kept.Blocks*512 > 1<<20 {
		t.Errorf("the kept original of a 16 MiB file with 18 bytes of data takes %d KiB: its holes were filled", kept.Blocks/2)
	}
}

// TestOpenCreatesNothing: a store that was never written opens empty and
// stays absent until its first Add, so a reader where the state root is
// read-only (inside `airlock run`) finds it empty instead of failing.
func TestOpenCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "originals")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Has(manifest.HashBytes([]byte("x"))) {
		t.Error("an unwritten store has an object")
	}
	if recs, err := s.Records(); err != nil || len(recs) != 0 {
		t.Errorf("Records of an unwritten store: %v, %v", recs, err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("Open created the store: %v", err)
	}
}

// TestAddReplacesAnObjectWhoseBytesAreWrong: an object a same-user
// process overwrote is not kept under its name when the same bytes are
// added again: Verify finds it wrong, and Add stores the right bytes over
// it.
func TestAddReplacesAnObjectWhoseBytesAreWrong(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := keep(t, s, "a.txt", "precious\n", 100)
	if err := s.Verify(e.Digest); err != nil {
		t.Fatalf("Verify of an object as Add stored it: %v", err)
	}
	if err := os.WriteFile(s.ObjectPath(e.Digest), []byte("tampered\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var bad *BadObjectError
	if err := s.Verify(e.Digest); !errors.As(err, &bad) || bad.Path != s.ObjectPath(e.Digest) {
		t.Fatalf("Verify of an overwritten object: %v, want a *BadObjectError naming %s", err, s.ObjectPath(e.Digest))
	}
	keep(t, s, "a.txt", "precious\n", 100)
	if got := read(t, s, e.Digest); got != "precious\n" {
		t.Errorf("after Add of the same bytes the object holds %q, want %q", got, "precious\n")
	}
	if err := s.Verify(e.Digest); err != nil {
		t.Errorf("Verify after Add replaced the object: %v", err)
	}
}

// TestLookupFindsBytesAtOpenNotCheckpoints: a base file's bytes at open
// that a checkpoint kept (KindAtOpen) are what the path held with those
// stat facts, and Lookup finds them; a checkpoint's staged bytes are not.
func TestLookupFindsBytesAtOpenNotCheckpoints(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind  string
		found bool
	}{{KindAtOpen, true}, {KindCheckpoint, false}} {
		src := filepath.Join(t.TempDir(), "src")
		content := "bytes " + tc.kind + "\n"
		if err := os.WriteFile(src, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		e := manifest.Entry{Path: tc.kind + ".txt", Kind: manifest.KindFile, Mode: 0o644, Size: int64(len(content)),
			MtimeNs: 1, CtimeNs: 2, Ino: 7, Dev: 9, Digest: manifest.HashBytes([]byte(content))}
		if err := s.AddKind(tc.kind, "tx1", e, src); err != nil {
			t.Fatal(err)
		}
		d, ok := s.Lookup(e)
		if ok != tc.found || (ok && d != e.Digest) {
			t.Errorf("Lookup of a %s record: %q, %v; want found %v", tc.kind, d, ok, tc.found)
		}
	}
}
