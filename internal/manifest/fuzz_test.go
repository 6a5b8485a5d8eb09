package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func FuzzBytesJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "a\xffb", "new\nline", "\x00", "ünï", `{"base64":"AA=="}`, "\xed\xa0\x80", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(Bytes(s))
		if err != nil {
			t.Fatalf("Marshal(%q): %v", s, err)
		}
		var got Bytes
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("Unmarshal(%s) of Marshal(%q): %v", b, s, err)
		}
		if string(got) != s {
			t.Fatalf("round trip of %q through %s gave %q", s, b, got)
		}
		// The same through an Entry, where path and target sit in an
		// object with other fields.
		e := Entry{Path: s, Kind: KindSymlink, Target: s + "\xff"}
		eb, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var ge Entry
		if err := json.Unmarshal(eb, &ge); err != nil {
			t.Fatalf("Unmarshal entry %s: %v", eb, err)
		}
		if ge != e {
			t.Fatalf("entry round trip through %s: got %+v, want %+v", eb, ge, e)
		}
	})
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"version":1,"entries":[{"path":"a","kind":"dir","mode":493},{"path":{"base64":"YS//"},"kind":"file","size":3}]}`))
	f.Add([]byte(`{"version":1,"entries":[{"path":"b","kind":"file"},{"path":"a","kind":"file"}]}`))
	f.Add([]byte(`{"version":1,"entries":null}`))
	f.Add([]byte(`{"version":1,"entries":[{"path":{"base64":null}}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "m.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := Load(p)
		if err != nil {
			return
		}
		for i := 1; i < len(m.Entries); i++ {
			if m.Entries[i-1].Path >= m.Entries[i].Path {
				t.Fatalf("Load accepted entries out of order: %q then %q", m.Entries[i-1].Path, m.Entries[i].Path)
			}
		}
	})
}
