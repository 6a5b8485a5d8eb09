package manifest

import (
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// referenceJSON is Entry's encoding as encoding/json makes it of the
// on-disk form: what AppendJSON must write byte for byte.
func referenceJSON(t *testing.T, e Entry) []byte {
	t.Helper()
	type referenceEntry struct {
		Path    referenceBytes `json:"path"`
		Kind    Kind           `json:"kind"`
		Mode    fs.FileMode    `json:"mode,omitempty"`
		Size    int64          `json:"size,omitempty"`
		MtimeNs int64          `json:"mtime_ns,omitempty"`
		CtimeNs int64          `json:"ctime_ns,omitempty"`
		Ino     uint64         `json:"ino,omitempty"`
		Dev     uint64         `json:"dev,omitempty"`
		Target  referenceBytes `json:"target,omitempty"`
		Digest  string         `json:"digest,omitempty"`
	}
	b, err := json.Marshal(referenceEntry{referenceBytes(e.Path), e.Kind, e.Mode, e.Size, e.MtimeNs, e.CtimeNs, e.Ino, e.Dev, referenceBytes(e.Target), e.Digest})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// referenceBytes encodes like Bytes, through encoding/json.
type referenceBytes string

func (s referenceBytes) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(s)) {
		return json.Marshal(string(s))
	}
	return json.Marshal(struct {
		B64 string `json:"base64"`
	}{base64.StdEncoding.EncodeToString([]byte(s))})
}

// names are strings json.Marshal writes as they are, and every kind it
// does not: escapes, HTML characters, control characters, multi-byte and
// line-separator runes, bytes that are not UTF-8.
var names = []string{"", "a", "dir/file.txt", `q"uote`, `back\slash`, "<html>&", "tab\there", "nl\n", "\x00", "\x7f", "é", "日本", "\u2028\u2029", "bad\xffname", "\xc3", "~!@#$%^*()_+{}|:?`-=[];',./"}

// TestAppendJSONIsMarshal: AppendJSON writes exactly what encoding/json
// makes of an entry's on-disk form, for every kind of name, number and
// omitted field.
func TestAppendJSONIsMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return names[rng.IntN(len(names))] }
	num := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return -rng.Int64()
		}
		return rng.Int64()
	}
	for i := range 20000 {
		e := Entry{Path: pick() + pick(), Kind: Kind(rng.IntN(7)), Mode: fs.FileMode(rng.Uint32() >> uint(rng.IntN(33))),
			Size: num(), MtimeNs: num(), CtimeNs: num(), Ino: uint64(num()), Dev: uint64(num()), Target: pick(), Digest: pick()}
		if i%3 == 0 {
			e = Entry{Path: e.Path, Kind: e.Kind}
		}
		want := referenceJSON(t, e)
		got, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("entry %+v\n got %s\nwant %s", e, got, want)
		}
		if e.Kind > KindOther || !utf8.ValidString(e.Digest) {
			continue // a kind no walk makes, a digest no hash writes: encoded as encoding/json does, not decoded back
		}
		var back Entry
		if err := json.Unmarshal(got, &back); err != nil || back != e {
			t.Fatalf("entry %+v decodes as %+v (%v)", e, back, err)
		}
	}
}
