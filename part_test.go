package airlock

import (
	"slices"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/changeset"
)

// PathSelector selects exactly the path it was given, and nothing its
// wildcards or marks would select were they read as such.
func TestPathSelector(t *testing.T) {
	names := []string{"a.txt", "*", "a*b", "q?", "[x]", `back\slash`, "!bang", "sp ", "dir/*.go", "#hash", "a b"}
	for _, name := range names {
		sel, each, err := selection("t", "/base", []string{PathSelector(name)}, nil)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		for _, other := range names {
			want := other == name
			if got := sel.Match(other, false); got != want {
				t.Errorf("PathSelector(%q) selects %q: %v, want %v", name, other, got, want)
			}
			if got := each[0].Match(other, false); got != want {
				t.Errorf("PathSelector(%q) alone selects %q: %v, want %v", name, other, got, want)
			}
		}
		if !sel.Match(name+"/under", false) {
			t.Errorf("PathSelector(%q) does not select what is beneath it", name)
		}
	}
}

// A path argument is anchored at the base: a plain name names the path
// at the top, not one of that name deeper; ** reaches any depth; .. and
// absolute paths outside the base are refused.
func TestSelectionAnchored(t *testing.T) {
	cases := []struct {
		args []string
		path string
		want bool
	}{
		{[]string{"a.txt"}, "a.txt", true},
		{[]string{"a.txt"}, "sub/a.txt", false},
		{[]string{"**/a.txt"}, "sub/a.txt", true},
		{[]string{"sub"}, "sub/deep/x", true},
		{[]string{"sub/"}, "sub/deep/x", true},
		{[]string{"./sub/deep"}, "sub/deep/x", true},
		{[]string{"/base/sub"}, "sub/x", true},
		{[]string{"*.go"}, "x.go", true},
		{[]string{"*.go"}, "sub/x.go", false},
		{[]string{"sub", "!sub/keep"}, "sub/keep", true}, // as in git: nothing beneath a selected directory is taken back
		{[]string{"sub/**", "!sub/keep"}, "sub/keep", false},
		{[]string{"sub/**", "!sub/keep"}, "sub/other", true},
		{[]string{"."}, "any/thing", true},
	}
	for _, c := range cases {
		sel, _, err := selection("t", "/base", c.args, nil)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if got := sel.Match(c.path, false); got != c.want {
			t.Errorf("%q selects %q: %v, want %v", c.args, c.path, got, c.want)
		}
	}
	for _, bad := range []string{"../x", "a/../../x", "/elsewhere/x", "/base/../x", "", "!"} {
		if _, _, err := selection("t", "/base", []string{bad}, nil); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

// A path that is a changed path, byte for byte, selects exactly it, though
// a selector would read it as another name; one that is not is read as a
// selector, and one that ends in an unquoted space is refused.
func TestSelectionLiteralChangedPath(t *testing.T) {
	set := &changeset.Set{}
	for _, p := range []string{"x", "x ", `a\b`, "ab", "!bang", "bang", "*", "q", "[d]/f", "d/f"} {
		set.Changes = append(set.Changes, changeset.Change{Path: p})
	}
	changed := changedPaths(set)
	cases := []struct {
		arg  string
		want []string
	}{
		{"x ", []string{"x "}},
		{`a\b`, []string{`a\b`}},
		{"!bang", []string{"!bang"}},
		{"*", []string{"*"}},
		{"[d]", []string{"[d]/f"}},
		{"/base/x ", []string{"x "}},
		{"[xq]", []string{"x", "q"}},
		{`a\\b`, []string{`a\b`}},
	}
	for _, c := range cases {
		sel, _, err := selection("t", "/base", []string{c.arg}, changed)
		if err != nil {
			t.Fatalf("%q: %v", c.arg, err)
		}
		var got []string
		for _, ch := range set.Changes {
			if sel.Match(ch.Path, false) {
				got = append(got, ch.Path)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q selects %q, want %q", c.arg, got, c.want)
		}
	}
	if _, _, err := selection("t", "/base", []string{"y "}, changed); err == nil || !strings.Contains(err.Error(), "ends in a space") {
		t.Errorf(`"y " (no changed path) was taken: %v`, err)
	}
}
