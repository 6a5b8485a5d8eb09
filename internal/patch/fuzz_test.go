package patch

import (
	"bytes"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/manifest"
)

// fuzzSide makes one side from fuzz input: kind 0 absent, 1 file, 2
// executable file, 3 symlink.
func fuzzSide(kind byte, data []byte) (Side, bool) {
	switch kind % 4 {
	case 1, 2:
		mode := fs.FileMode(0o644)
		if kind%4 == 2 {
			mode = 0o755
		}
		d := string(data)
		return Side{Kind: manifest.KindFile, Mode: mode, Open: func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(d)), nil
		}}, true
	case 3:
		if len(data) == 0 || bytes.IndexByte(data, 0) >= 0 {
			return Side{}, false // not a target a symlink can have
		}
		return Side{Kind: manifest.KindSymlink, Target: string(data)}, true
	}
	return Side{}, true
}

// validPath reports whether p could name an entry in a change set.
func validPath(p string) bool {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// FuzzWrite: any pair of sides gives a patch that a strict reader parses
// and that turns the old side into the new one exactly; Stat and
// NameStatus report a path exactly when Write prints one.
func FuzzWrite(f *testing.F) {
	f.Add("f", byte(1), []byte("a\nb\nc\n"), byte(1), []byte("a\nB\nc\n"))
	f.Add("sp ace/x", byte(1), []byte("no newline"), byte(2), []byte("no newline\n"))
	f.Add("caf\xc3\xa9\n\t\"\\", byte(0), []byte(nil), byte(1), []byte("\x00binary"))
	f.Add("l", byte(3), []byte("target"), byte(1), []byte("file\r\n"))
	f.Add("d", byte(1), []byte("\r\n\r\n"), byte(0), []byte(nil))
	f.Add("e", byte(1), []byte(""), byte(1), []byte("\n"))
	f.Add("m", byte(1), []byte("same"), byte(2), []byte("same"))
	f.Fuzz(func(t *testing.T, path string, oldKind byte, oldData []byte, newKind byte, newData []byte) {
		if !validPath(path) {
			return
		}
		o, ok1 := fuzzSide(oldKind, oldData)
		n, ok2 := fuzzSide(newKind, newData)
		if !ok1 || !ok2 {
			return
		}
		files := []File{{Path: path, Old: o, New: n}}
		var patch, stat, ns bytes.Buffer
		if err := Write(&patch, files); err != nil {
			t.Fatal(err)
		}
		if err := Stat(&stat, files); err != nil {
			t.Fatal(err)
		}
		if err := NameStatus(&ns, files); err != nil {
			t.Fatal(err)
		}
		if (patch.Len() == 0) != (ns.Len() == 0) || (patch.Len() == 0) != (stat.Len() == 0) {
			t.Fatalf("Write printed %d bytes, Stat %d, NameStatus %d", patch.Len(), stat.Len(), ns.Len())
		}
		if patch.Len() > 0 && !strings.HasPrefix(patch.String(), "diff --git ") {
			t.Fatalf("patch does not start with a git header:\n%s", patch.String())
		}

		mem := func(s Side, data []byte) map[string]mblob {
			m := map[string]mblob{}
			if mode := gitMode(s); mode != 0 {
				m[path] = mblob{mode, string(data)}
			}
			return m
		}
		got, want := mem(o, oldData), mem(n, newData)
		if err := applyPatch(got, patch.String()); err != nil {
			t.Fatalf("%v\npatch:\n%s", err, patch.String())
		}
		if d := diffMem(got, want); d != "" {
			t.Fatalf("patch does not reproduce the new side:\n%s\npatch:\n%s", d, patch.String())
		}
	})
}

// FuzzDiffLines: over a four-line alphabet, so that inputs share many
// lines, the script keeps exactly a longest common subsequence.
func FuzzDiffLines(f *testing.F) {
	f.Add([]byte("abcabba"), []byte("cbabac"))
	f.Add([]byte(""), []byte("aaaa"))
	f.Fuzz(func(t *testing.T, x, y []byte) {
		if len(x) > 250 || len(y) > 250 { // beyond, maxCost could cut the search short
			return
		}
		lines := func(bs []byte) []string {
			out := make([]string, len(bs))
			for i, c := range bs {
				out[i] = string(rune('a'+c%4)) + "\n"
			}
			return out
		}
		a, b := lines(x), lines(y)
		delA, insB := diffLines(a, b)
		if kept, want := checkScript(t, a, b, delA, insB), lcsLen(a, b); kept != want {
			t.Fatalf("kept %d lines, the longest common subsequence has %d", kept, want)
		}
	})
}
