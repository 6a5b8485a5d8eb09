package changeset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/manifest"
)

func freeze(t *testing.T, set *Set, staged string) string {
	t.Helper()
	objects := filepath.Join(t.TempDir(), "objects")
	if err := Freeze(context.Background(), set, staged, objects); err != nil {
		t.Fatal(err)
	}
	return objects
}

func TestFreezeStoresContentByDigest(t *testing.T) {
	f := newFixture(t, []node{file("mod.txt", "old", 0o644), file("del.txt", "x", 0o644), link("l", "mod.txt")})
	must(t, os.WriteFile(f.s("mod.txt"), []byte("new content"), 0o644))
	must(t, os.Remove(f.s("del.txt")))
	build(t, f.staged, []node{file("a/one", "same bytes", 0o644), file("a/two", "same bytes", 0o600), file("empty", "", 0o644)})
	must(t, os.Remove(f.s("l")))
	must(t, os.Symlink("a/one", f.s("l")))
	set := f.diff(t)
	objects := freeze(t, set, f.staged)

	names := map[string]bool{}
	for _, c := range set.Changes {
		switch c.Result.Kind {
		case manifest.KindFile:
			content, err := os.ReadFile(f.s(c.Path))
			must(t, err)
			if want := manifest.HashBytes(content); c.Result.Digest != want {
				t.Errorf("%s: digest %s, want %s", c.Path, c.Result.Digest, want)
			}
			if c.Result.Size != int64(len(content)) {
				t.Errorf("%s: size %d, want %d", c.Path, c.Result.Size, len(content))
			}
			obj := ObjectPath(objects, c.Result.Digest)
			got, err := os.ReadFile(obj)
			if err != nil {
				t.Errorf("%s: no object: %v", c.Path, err)
				continue
			}
			sum := sha256.Sum256(got)
			if filepath.Base(obj) != hex.EncodeToString(sum[:]) {
				t.Errorf("%s: object %s holds bytes hashing to %x", c.Path, filepath.Base(obj), sum)
			}
			names[filepath.Base(obj)] = true
		default:
			if c.Result.Digest != "" {
				t.Errorf("%s (%s): digest %s on a non-file", c.Path, c.Result.Kind, c.Result.Digest)
			}
		}
	}
	ents, err := os.ReadDir(objects)
	must(t, err)
	var listed []string
	for _, e := range ents {
		listed = append(listed, e.Name())
		if strings.HasPrefix(e.Name(), ".freeze-") {
			t.Errorf("temporary %s left in the object store", e.Name())
		}
	}
	// mod.txt, empty, and one object for a/one and a/two.
	if len(listed) != 3 || len(names) != 3 {
		t.Errorf("objects %q, want 3 (identical content stored once)", listed)
	}
}

func TestFreezeIsolatesLaterWrites(t *testing.T) {
	f := newFixture(t, []node{file("f", "before", 0o644)})
	must(t, os.WriteFile(f.s("f"), []byte("checked bytes"), 0o644))
	set := f.diff(t)
	objects := freeze(t, set, f.staged)
	d := set.Changes[0].Result.Digest

	// The command keeps writing: in place (same inode) and by truncation.
	fh, err := os.OpenFile(f.s("f"), os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	_, err = fh.WriteString("EVIL")
	must(t, err)
	must(t, fh.Close())

	got, err := os.ReadFile(ObjectPath(objects, d))
	must(t, err)
	if string(got) != "checked bytes" {
		t.Fatalf("frozen object now holds %q", got)
	}
	oe, err := manifest.Lstat(ObjectPath(objects, d))
	must(t, err)
	se, err := manifest.Lstat(f.s("f"))
	must(t, err)
	if oe.Ino == se.Ino && oe.Dev == se.Dev {
		t.Fatal("the frozen object is the staged file's inode")
	}
}

func TestFreezeRefusesSymlinkSwap(t *testing.T) {
	f := newFixture(t, []node{file("f", "before", 0o644)})
	must(t, os.WriteFile(f.s("f"), []byte("after!"), 0o644))
	set := f.diff(t)
	// Between the diff and the freeze, the file becomes a symlink to a
	// secret outside the staged tree.
	secret := filepath.Join(t.TempDir(), "secret")
	must(t, os.WriteFile(secret, []byte("secret"), 0o600))
	must(t, os.Remove(f.s("f")))
	must(t, os.Symlink(secret, f.s("f")))
	objects := filepath.Join(t.TempDir(), "objects")
	if err := Freeze(context.Background(), set, f.staged, objects); err == nil {
		t.Fatal("Freeze followed a symlink swapped in for a changed file")
	}
	if _, err := os.Stat(ObjectPath(objects, manifest.HashBytes([]byte("secret")))); err == nil {
		t.Fatal("the secret was frozen")
	}
}

func TestFreezeMissingFile(t *testing.T) {
	f := newFixture(t, []node{file("f", "before", 0o644)})
	must(t, os.WriteFile(f.s("f"), []byte("after!"), 0o644))
	set := f.diff(t)
	must(t, os.Remove(f.s("f")))
	err := Freeze(context.Background(), set, f.staged, filepath.Join(t.TempDir(), "objects"))
	if err == nil || !strings.Contains(err.Error(), f.s("f")) {
		t.Fatalf("Freeze of a vanished file: %v, want an error naming it", err)
	}
}

func sampleSet() *Set {
	return &Set{
		Changes: []Change{
			{Path: "a", Op: Add, Result: manifest.Entry{Kind: manifest.KindFile, Mode: 0o644, Digest: manifest.HashBytes([]byte("a"))}},
			{Path: "b\xff", Op: Modify, Base: manifest.Entry{Kind: manifest.KindFile, Mode: 0o644}, Result: manifest.Entry{Kind: manifest.KindSymlink, Target: "a"}},
			{Path: "c", Op: Delete, Base: manifest.Entry{Kind: manifest.KindDir, Mode: 0o755}},
			{Path: "d", Op: Modify, Base: manifest.Entry{Kind: manifest.KindDir, Mode: 0o755}, Result: manifest.Entry{Kind: manifest.KindDir, Mode: 0o700}},
		},
		GitMeta:     2,
		Unsupported: []manifest.Bytes{"pipe\n"},
	}
}

func TestSetDigest(t *testing.T) {
	want := sampleSet().Digest()
	if got := sampleSet().Digest(); got != want {
		t.Fatalf("same set, different digests: %s %s", got, want)
	}
	if !strings.HasPrefix(want, manifest.DigestPrefix) {
		t.Fatalf("digest %s lacks its prefix", want)
	}
	edits := map[string]func(*Set){
		"path":           func(s *Set) { s.Changes[0].Path = "a2" },
		"op":             func(s *Set) { s.Changes[0].Op = Modify },
		"result kind":    func(s *Set) { s.Changes[3].Result.Kind = manifest.KindFile },
		"result mode":    func(s *Set) { s.Changes[0].Result.Mode = 0o755 },
		"content":        func(s *Set) { s.Changes[0].Result.Digest = manifest.HashBytes([]byte("b")) },
		"symlink target": func(s *Set) { s.Changes[1].Result.Target = "c" },
		"a change fewer": func(s *Set) { s.Changes = s.Changes[:3] },
		"dir mode":       func(s *Set) { s.Changes[3].Result.Mode = 0o755 },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			s := sampleSet()
			edit(s)
			if s.Digest() == want {
				t.Errorf("digest did not change with the %s", name)
			}
		})
	}
	// The base side is not what a commit applies.
	s := sampleSet()
	s.Changes[1].Base.Mode = 0o600
	if s.Digest() != want {
		t.Error("digest depends on the base entry")
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "changeset.json")
	s := sampleSet()
	must(t, s.Save(p))
	fi, err := os.Stat(p)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("change set file mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := Load(p)
	must(t, err)
	if got.Digest() != s.Digest() {
		t.Error("digest changed through Save and Load")
	}
	if len(got.Changes) != len(s.Changes) || got.GitMeta != 2 || len(got.Unsupported) != 1 || got.Unsupported[0] != "pipe\n" {
		t.Fatalf("loaded %+v", got)
	}
	for i := range s.Changes {
		a, b := s.Changes[i], got.Changes[i]
		if a.Path != b.Path || a.Op != b.Op || a.Base != b.Base || a.Result != b.Result {
			t.Errorf("change %d: got %+v, want %+v", i, b, a)
		}
	}
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"out of order", `{"changes":[{"path":"b","op":"add","base":{"path":"","kind":"none"},"result":{"path":"","kind":"file"}},{"path":"a","op":"add","base":{"path":"","kind":"none"},"result":{"path":"","kind":"file"}}]}`, "out of order"},
		{"duplicate", `{"changes":[{"path":"a","op":"add","base":{"path":"","kind":"none"},"result":{"path":"","kind":"file"}},{"path":"a","op":"delete","base":{"path":"","kind":"file"},"result":{"path":"","kind":"none"}}]}`, "out of order"},
		{"no op", `{"changes":[{"path":"a","base":{"path":"","kind":"none"},"result":{"path":"","kind":"file"}}]}`, "no op"},
		{"unknown op", `{"changes":[{"path":"a","op":"rename"}]}`, "corrupt change set"},
		{"garbage", `}{`, "corrupt change set"},
		{"truncated", `{"changes":[{"path":"a","op":"ad`, "corrupt change set"},
		{"empty file", ``, "corrupt change set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "changeset.json")
			must(t, os.WriteFile(p, []byte(tt.data), 0o600))
			s, err := Load(p)
			if err == nil {
				t.Fatalf("Load accepted %s as %+v", tt.data, s)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestOpText(t *testing.T) {
	for _, o := range []Op{Add, Modify, Delete} {
		b, _ := o.MarshalText()
		var got Op
		if err := got.UnmarshalText(b); err != nil || got != o {
			t.Errorf("op %v round trip: %v %v", o, got, err)
		}
	}
	if s := Op(9).String(); s != "op(9)" {
		t.Errorf("Op(9).String() = %q", s)
	}
}

func FuzzLoad(f *testing.F) {
	b, _ := json.Marshal(sampleSet())
	f.Add(b)
	f.Add([]byte(`{"changes":[{"path":"a","op":"add"}],"git_meta":1,"unsupported":[{"base64":"/w=="}]}`))
	f.Add([]byte(`{"changes":null}`))
	f.Add([]byte(`{"changes":[{"path":{"base64":""},"op":"delete"}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "changeset.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Load(p)
		if err != nil {
			return
		}
		for i, c := range s.Changes {
			if c.Op < Add || c.Op > Delete {
				t.Fatalf("Load accepted change %d without an op", i)
			}
			if i > 0 && s.Changes[i-1].Path >= c.Path {
				t.Fatalf("Load accepted changes out of order")
			}
		}
		_ = s.Digest()
		s.Counts()
	})
}
