package manifest

import (
	"slices"
	"strings"
	"testing"
)

// TestWalkOrder holds the walk's depth-first assembly to plain byte order
// on names where the two differ: siblings that extend a directory's name
// with a byte below or above '/'.
func TestWalkOrder(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"a/x", "a/y/z", "a.txt", "a-b/c", "a0", "a/-", "a/.h", "ab/c", "b", "\xff/q", "a/y.z"} {
		mkfile(t, root, p, "x", 0o644)
	}
	mkdir(t, root, "a/empty", 0o755)
	mklink(t, root, "a/link", "../b")
	m := walk(t, root, WalkOptions{Workers: 3})
	var got []string
	for _, e := range m.Entries {
		got = append(got, e.Path)
	}
	want := slices.Clone(got)
	slices.SortFunc(want, strings.Compare)
	if !slices.Equal(got, want) {
		t.Fatalf("walk order\n got %q\nwant %q", got, want)
	}
	if len(got) != 18 {
		t.Errorf("got %d entries, want 18: %q", len(got), got)
	}
}

func TestCompareKeys(t *testing.T) {
	tests := []struct {
		a  string
		as bool
		b  string
		bs bool
	}{
		{"a", false, "a", true},
		{"a", true, "a.txt", false},
		{"a", true, "a0", false},
		{"a", true, "ab", true},
		{"a-b", true, "a", true},
		{"x", false, "y", false},
		{"a", true, "a", true},
	}
	for _, tt := range tests {
		ka, kb := tt.a, tt.b
		if tt.as {
			ka += "/"
		}
		if tt.bs {
			kb += "/"
		}
		if got, want := compareKeys(tt.a, tt.as, tt.b, tt.bs), strings.Compare(ka, kb); got != want {
			t.Errorf("compareKeys(%q, %q) = %d, want %d", ka, kb, got, want)
		}
		if got, want := compareKeys(tt.b, tt.bs, tt.a, tt.as), strings.Compare(kb, ka); got != want {
			t.Errorf("compareKeys(%q, %q) = %d, want %d", kb, ka, got, want)
		}
	}
}
