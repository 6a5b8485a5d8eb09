package safefs

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestCheckRel(t *testing.T) {
	tests := []struct {
		rel string
		ok  bool
	}{
		{"a", true},
		{"a/b/c", true},
		{"..a", true},
		{"a..", true},
		{".hidden/x", true},
		{"a b/\n/\xff", true},
		{"", false},
		{"/", false},
		{"/etc/x", false},
		{"..", false},
		{"../x", false},
		{"a/..", false},
		{"a/../../x", false},
		{".", false},
		{"./a", false},
		{"a/./b", false},
		{"a//b", false},
		{"a/", false},
		{"a\x00b", false},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.rel, "/", "|"), func(t *testing.T) {
			err := checkRel(tt.rel)
			if tt.ok && err != nil {
				t.Fatalf("checkRel(%q) = %v, want nil", tt.rel, err)
			}
			if !tt.ok && !errors.Is(err, ErrEscape) {
				t.Fatalf("checkRel(%q) = %v, want ErrEscape", tt.rel, err)
			}
		})
	}
	if err := checkRelOrRoot(""); err != nil {
		t.Errorf("checkRelOrRoot(\"\") = %v, want nil", err)
	}
}

func TestChunkComponents(t *testing.T) {
	tests := []struct {
		comps []string
		max   int
		want  []string
	}{
		{nil, 10, nil},
		{[]string{"a"}, 10, []string{"a"}},
		{[]string{"aaa", "bbb", "ccc"}, 7, []string{"aaa/bbb", "ccc"}},
		{[]string{"aaa", "bbb", "ccc"}, 6, []string{"aaa", "bbb", "ccc"}},
		{[]string{"aaaaaaaaaaaa", "b"}, 5, []string{"aaaaaaaaaaaa", "b"}},
		{[]string{"a", "b", "c"}, 100, []string{"a/b/c"}},
	}
	for _, tt := range tests {
		got := chunkComponents(tt.comps, tt.max)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("chunkComponents(%q, %d) = %q, want %q", tt.comps, tt.max, got, tt.want)
		}
	}
}

// FuzzCheckRel holds checkRel to an oracle built from package path: a path
// is accepted exactly when it is non-empty, NUL-free, relative, already
// clean, and does not climb out with "..".
func FuzzCheckRel(f *testing.F) {
	for _, s := range []string{"a", "a/b", "", ".", "..", "../a", "a/..", "a//b", "./a", "a/", "/a", "a\x00", "\xff/\n", "...", "a/.../b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		err := checkRel(rel)
		want := rel != "" &&
			!strings.Contains(rel, "\x00") &&
			!path.IsAbs(rel) &&
			path.Clean(rel) == rel &&
			rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
		if want != (err == nil) {
			t.Fatalf("checkRel(%q) = %v, oracle says valid=%v", rel, err, want)
		}
		if err != nil {
			if !errors.Is(err, ErrEscape) {
				t.Fatalf("checkRel(%q) = %v, not ErrEscape", rel, err)
			}
			return
		}
		if j := path.Join("/root", rel); !strings.HasPrefix(j, "/root/") {
			t.Fatalf("accepted %q joins to %q, outside /root", rel, j)
		}
		comps := splitRel(rel)
		for _, max := range []int{1, 16, 4095} {
			chunks := chunkComponents(comps, max)
			if strings.Join(chunks, "/") != rel {
				t.Fatalf("chunks of %q at %d = %q, do not rejoin", rel, max, chunks)
			}
			for _, c := range chunks {
				if len(c) > max && strings.Contains(c, "/") {
					t.Fatalf("chunk %q of %q is over %d bytes", c, rel, max)
				}
			}
		}
	})
}
