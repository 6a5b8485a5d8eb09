package manifest

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEntryJSONRoundTrip(t *testing.T) {
	tests := []Entry{
		{Path: "plain.txt", Kind: KindFile, Mode: 0o644, Size: 12, MtimeNs: 1, CtimeNs: 2, Ino: 3, Dev: 4, Digest: HashBytes([]byte("x"))},
		{Path: "dir/\xff\xfe name", Kind: KindSymlink, Mode: 0o777, Target: "../\x80target\n"},
		{Path: "new\nline/\x00?", Kind: KindDir, Mode: 0o755 | fs.ModeSetgid | fs.ModeSticky},
		{Path: "suid", Kind: KindFile, Mode: 0o755 | fs.ModeSetuid},
		{Path: "gone", Kind: KindNone},
		{Path: "fifo", Kind: KindOther, Mode: 0o600},
		{Path: "ünïcode/日本", Kind: KindSymlink, Target: "ok"},
	}
	for _, e := range tests {
		t.Run(e.Path, func(t *testing.T) {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var got Entry
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("unmarshal %s: %v", b, err)
			}
			if got != e {
				t.Errorf("round trip through %s:\n got %+v\nwant %+v", b, got, e)
			}
		})
	}
}

func TestBytesJSONForm(t *testing.T) {
	tests := []struct {
		in   Bytes
		want string
	}{
		{"plain", `"plain"`},
		{"", `""`},
		{"ünï", `"ünï"`},
		{"a\xffb", `{"base64":"Yf9i"}`},
		{"\x80", `{"base64":"gA=="}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("Marshal(%q) = %s, want %s", tt.in, b, tt.want)
		}
	}
}

func TestBytesUnmarshalRefuses(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"b64":"AA=="}`,
		`{"base64":"!!!"}`,
		`{"base64":7}`,
		`12`,
		`[1]`,
		`{`,
	} {
		var b Bytes
		if err := json.Unmarshal([]byte(in), &b); err == nil {
			t.Errorf("Unmarshal(%s) accepted it as %q", in, b)
		}
	}
}

func TestKindText(t *testing.T) {
	for _, k := range []Kind{KindNone, KindFile, KindDir, KindSymlink, KindOther} {
		b, err := k.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got Kind
		if err := got.UnmarshalText(b); err != nil || got != k {
			t.Errorf("kind %v: round trip through %q gave %v, %v", k, b, got, err)
		}
	}
	var k Kind
	if err := k.UnmarshalText([]byte("fifo")); err == nil {
		t.Error("UnmarshalText accepted an unknown kind")
	}
	if s := Kind(42).String(); s != "kind(42)" {
		t.Errorf("Kind(42).String() = %q", s)
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		mode fs.FileMode
		want Kind
	}{
		{0o644, KindFile},
		{fs.ModeDir | 0o755, KindDir},
		{fs.ModeSymlink | 0o777, KindSymlink},
		{fs.ModeNamedPipe, KindOther},
		{fs.ModeSocket, KindOther},
		{fs.ModeDevice | fs.ModeCharDevice, KindOther},
		{fs.ModeDevice, KindOther},
	}
	for _, tt := range tests {
		if got := KindOf(tt.mode); got != tt.want {
			t.Errorf("KindOf(%v) = %v, want %v", tt.mode, got, tt.want)
		}
	}
}

func TestSameStatAndShape(t *testing.T) {
	base := Entry{Path: "f", Kind: KindFile, Mode: 0o644, Size: 3, MtimeNs: 10, CtimeNs: 11, Ino: 12, Dev: 13, Digest: "sha256:aa"}
	if !SameStat(base, base) || !SameShape(base, base) {
		t.Fatal("an entry differs from itself")
	}
	// Path and Digest are not stat facts.
	other := base
	other.Path, other.Digest = "g", "sha256:bb"
	if !SameStat(base, other) {
		t.Error("SameStat compares path or digest")
	}
	edits := map[string]func(*Entry){
		"kind":   func(e *Entry) { e.Kind = KindDir },
		"mode":   func(e *Entry) { e.Mode = 0o600 },
		"size":   func(e *Entry) { e.Size = 4 },
		"mtime":  func(e *Entry) { e.MtimeNs++ },
		"ctime":  func(e *Entry) { e.CtimeNs++ },
		"ino":    func(e *Entry) { e.Ino++ },
		"dev":    func(e *Entry) { e.Dev++ },
		"target": func(e *Entry) { e.Target = "x" },
	}
	for name, edit := range edits {
		e := base
		edit(&e)
		if SameStat(base, e) {
			t.Errorf("SameStat ignores %s", name)
		}
	}
	// Shape: kind, mode, target; a symlink's mode does not count.
	for name, edit := range map[string]func(*Entry){"kind": edits["kind"], "mode": edits["mode"], "target": edits["target"]} {
		e := base
		edit(&e)
		if SameShape(base, e) {
			t.Errorf("SameShape ignores %s", name)
		}
	}
	for name, edit := range map[string]func(*Entry){"size": edits["size"], "mtime": edits["mtime"], "ino": edits["ino"]} {
		e := base
		edit(&e)
		if !SameShape(base, e) {
			t.Errorf("SameShape compares %s", name)
		}
	}
	l1 := Entry{Kind: KindSymlink, Mode: 0o777, Target: "t"}
	l2 := Entry{Kind: KindSymlink, Mode: 0o755, Target: "t"}
	if !SameShape(l1, l2) {
		t.Error("SameShape compares a symlink's mode")
	}
}

func TestManifestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	m := &Manifest{Entries: []Entry{
		{Path: "a", Kind: KindDir, Mode: 0o755},
		{Path: "a/\xff", Kind: KindFile, Mode: 0o644, Size: 1},
		{Path: "b", Kind: KindSymlink, Target: "a/\xff"},
	}}
	p := filepath.Join(dir, "m.json")
	if err := m.Save(p); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("manifest mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != len(m.Entries) {
		t.Fatalf("loaded %d entries, want %d", len(got.Entries), len(m.Entries))
	}
	for i := range m.Entries {
		if got.Entries[i] != m.Entries[i] {
			t.Errorf("entry %d: got %+v, want %+v", i, got.Entries[i], m.Entries[i])
		}
	}
	if e, ok := got.Lookup("a/\xff"); !ok || e.Kind != KindFile {
		t.Errorf("Lookup after Load: %v %v", e, ok)
	}
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"unsorted", `{"version":1,"entries":[{"path":"b","kind":"file"},{"path":"a","kind":"file"}]}`, "out of order"},
		{"duplicate", `{"version":1,"entries":[{"path":"a","kind":"file"},{"path":"a","kind":"dir"}]}`, "out of order"},
		{"garbage", `not json at all`, "corrupt manifest"},
		{"truncated", `{"version":1,"entries":[{"path":"a","kind":"fi`, "corrupt manifest"},
		{"unknown kind", `{"version":1,"entries":[{"path":"a","kind":"fifo"}]}`, "corrupt manifest"},
		{"bad base64 path", `{"version":1,"entries":[{"path":{"base64":"%%"},"kind":"file"}]}`, "corrupt manifest"},
		{"no version", `{"entries":[]}`, "unknown version"},
		{"future version", `{"version":2,"entries":[]}`, "unknown version"},
		{"empty", ``, "corrupt manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.json")
			if err := os.WriteFile(p, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			m, err := Load(p)
			if err == nil {
				t.Fatalf("Load accepted %s as %+v", tt.data, m.Entries)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}
