package selector

import (
	"fmt"
	"strings"
	"testing"
)

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, pattern, want string
	}{
		{"empty", "", "is empty"},
		{"spaces", "   ", "is empty"},
		{"tab", "\t", "is empty"},
		{"nul", "a\x00b", "NUL"},
		{"comment", "#build", "comment"},
		{"bare negation", "!", "names no path"},
		{"negated spaces", "!   ", "names no path"},
		{"bare slash", "/", "names no path"},
		{"negated slash", "!/", "names no path"},
		{"double slash", "//", "names no path"},
		{"unclosed class", "[abc", "never closed"},
		{"unclosed class after star", "*.[ch", "never closed"},
		{"lone backslash", `build\`, "lone backslash"},
		{"unknown posix class", "[[:word:]]", "not a character class"},
		{"empty posix class", "[[::]]", "not a character class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New([]string{"ok", tc.pattern})
			if err == nil {
				t.Fatalf("New accepted %q (%d patterns)", tc.pattern, s.Len())
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not say %q", msg, tc.want)
			}
			if !strings.Contains(msg, fmt.Sprintf("selector %q", tc.pattern)) {
				t.Errorf("error %q does not name the pattern %q", msg, tc.pattern)
			}
		})
	}
}

func TestNewAccepts(t *testing.T) {
	for _, p := range []string{`\#hash`, `\!bang`, " leading", "trail ", `trail\ `, "[]]", "[!]]", "[[:alpha:]]", "\xff\xfe", "a\nb", "**", "!keep.log"} {
		if _, err := New([]string{p}); err != nil {
			t.Errorf("New(%q): %v", p, err)
		}
	}
}

func TestLenAndPatterns(t *testing.T) {
	in := []string{"*.log", "!keep.log", "/build"}
	s, err := New(in)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 3 {
		t.Errorf("Len = %d, want 3", s.Len())
	}
	got := s.Patterns()
	if strings.Join(got, "\n") != strings.Join(in, "\n") {
		t.Errorf("Patterns = %q, want %q", got, in)
	}
	got[0] = "changed"
	in[1] = "changed"
	if p := s.Patterns(); p[0] != "*.log" || p[1] != "!keep.log" {
		t.Errorf("Patterns shares memory with its caller: %q", p)
	}
}

func TestNilAndEmptySetMatchNothing(t *testing.T) {
	var nilSet *Set
	empty, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Set{nilSet, empty, {}} {
		if s.Match("a", false) || s.Match("a/b", true) || s.MatchSelf("a", true) {
			t.Errorf("%#v matched", s)
		}
		if s.Len() != 0 || len(s.Patterns()) != 0 {
			t.Errorf("%#v has patterns", s)
		}
	}
}

type probe struct {
	path        string
	isDir       bool
	match, self bool
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patterns []string
		probes   []probe
	}{
		{"basename at any depth", []string{"*.log"}, []probe{
			{"x.log", false, true, true},
			{"a/b/x.log", false, true, true},
			{"a/x.log.txt", false, false, false},
			{"x.log", true, true, true},
		}},
		{"anchored", []string{"/build"}, []probe{
			{"build", true, true, true},
			{"build/out.o", false, true, false},
			{"src/build", true, false, false},
		}},
		{"directory only", []string{"build/"}, []probe{
			{"build", false, false, false},
			{"build", true, true, true},
			{"src/build", true, true, true},
			{"src/build/x", false, true, false},
		}},
		{"negation", []string{"*.log", "!keep.log"}, []probe{
			{"a.log", false, true, true},
			{"keep.log", false, false, false},
			{"d/keep.log", false, false, false},
		}},
		{"negation cannot reach inside an excluded directory", []string{"logs/", "!logs/keep.log"}, []probe{
			{"logs", true, true, true},
			{"logs/keep.log", false, true, false},
		}},
		{"a later pattern wins", []string{"!keep.log", "*.log"}, []probe{
			{"keep.log", false, true, true},
		}},
		{"double star between slashes", []string{"a/**/b"}, []probe{
			{"a/b", false, true, true},
			{"a/x/y/b", false, true, true},
			{"a/xb", false, false, false},
			{"x/a/b", false, false, false},
		}},
		{"leading double star", []string{"**/x"}, []probe{
			{"x", false, true, true},
			{"p/q/x", true, true, true},
			{"p/qx", false, false, false},
		}},
		{"trailing double star excludes the directory's contents, not itself", []string{"a/**", "!a/keep"}, []probe{
			{"a", true, false, false},
			{"a/b", false, true, true},
			{"a/keep", false, false, false},
			{"a/b/c", false, true, true},
		}},
		{"single star does not cross a slash", []string{"doc/*.txt"}, []probe{
			{"doc/a.txt", false, true, true},
			{"doc/sub/a.txt", false, false, false},
		}},
		{"escaped bang and hash", []string{`\!bang`, `\#hash`}, []probe{
			{"!bang", false, true, true},
			{"bang", false, false, false},
			{"d/#hash", false, true, true},
		}},
		{"trailing spaces", []string{"trail   ", `sp\ `}, []probe{
			{"trail", false, true, true},
			{"trail ", false, false, false},
			{"sp ", false, true, true},
			{"sp", false, false, false},
		}},
		{"classes", []string{"[a-c]", "[!x-z]?"}, []probe{
			{"b", false, true, true},
			{"d", false, false, false},
			{"dq", false, true, true},
			{"yq", false, false, false},
		}},
		{"question mark is one byte", []string{"?.txt"}, []probe{
			{"a.txt", false, true, true},
			{"é.txt", false, false, false},
			{"\xff.txt", false, true, true},
		}},
		{"names that are not utf-8", []string{"\xff*"}, []probe{
			{"\xfe\xff", false, false, false},
			{"d/\xff\xfe", false, true, true},
		}},
		{"empty path is the base itself", []string{"*"}, []probe{
			{"", true, false, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.patterns)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.probes {
				if got := s.Match(p.path, p.isDir); got != p.match {
					t.Errorf("Match(%q, dir=%v) = %v, want %v", p.path, p.isDir, got, p.match)
				}
				if got := s.MatchSelf(p.path, p.isDir); got != p.self {
					t.Errorf("MatchSelf(%q, dir=%v) = %v, want %v", p.path, p.isDir, got, p.self)
				}
			}
		})
	}
}

// A backtracking matcher takes exponential time on this; the automaton
// must not.
func TestMatchManyStarsIsLinear(t *testing.T) {
	s, err := New([]string{strings.Repeat("*a", 30) + "b"})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 4000)
	if s.Match(long, false) {
		t.Error("matched a name without a b")
	}
	if !s.Match(long+"b", false) {
		t.Error("did not match a name of many a's and a b")
	}
}

func TestLongPatternUsesWideStateSet(t *testing.T) {
	// More than 256 tokens forces the heap-allocated state set.
	p := strings.Repeat("?", 300)
	s, err := New([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Match(strings.Repeat("x", 300), false) || s.Match(strings.Repeat("x", 299), false) {
		t.Error("300 question marks do not match exactly 300 bytes")
	}
}
