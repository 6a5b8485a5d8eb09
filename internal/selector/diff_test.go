package selector

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// oracleTree is small but has every shape the patterns below care about:
// nesting, a name that is a directory in one place and a file in another,
// and names with spaces, a leading "!" or "#", brackets, and bytes that are
// not ASCII or not UTF-8.
func oracleTree() []node {
	dirs := []string{
		"a", "a/b", "a/x", "a/x/b", "a/c", "a/c/d", "a/c/d/b",
		"build", "src", "src/build", "doc", "doc/sub", "x", "x/y", "keep",
		"sp ace", "\xff\xfe", "é",
	}
	files := []string{
		"keep.log", "app.log", "c.txt", "b", "x", "!bang", "bang", "#hash",
		"trail ", "sp ace", "é.txt", "\xff.bin", "[ab]", "q", "build", "a.b.c", "Y.TXT",
	}
	// Control bytes are only at the root: they are there to pin the POSIX
	// classes, which do not need depth.
	rootOnly := []string{
		"tab\there", "nl\nhere", "cr\rhere", "vt\vhere", "ff\fhere", "ctl\x01", "del\x7f",
		"UP", "9lives", "under_score", "hex0f", "-dash", "]close", "[open",
	}
	var tree []node
	for _, f := range rootOnly {
		tree = append(tree, node{f, false})
	}
	isDir := map[string]bool{}
	for _, d := range dirs {
		tree = append(tree, node{d, true})
		isDir[d] = true
	}
	for _, d := range append([]string{""}, dirs...) {
		for _, f := range files {
			p := f
			if d != "" {
				p = d + "/" + f
			}
			if !isDir[p] {
				tree = append(tree, node{p, false})
			}
		}
	}
	return tree
}

var oraclePatterns = []string{
	"*.log", "/build", "build/", "build", "!keep.log", "a/**/b", "**/x", "doc/*.txt",
	`\!bang`, "!bang", "bang", `\#hash`, "trail ", `trail\ `, `trail\ \ `, `sp\ ace`, "sp ace", "c.txt   ",
	"[a-c]", "[!a-c]", "[^a-c]", "[]]", `\[ab]`, "[[]ab]", "*[ab]*", "[a-]", "[-a]", "[!]a]",
	"?", "??", "a/?", "?.txt", "??.txt", "???.txt", "\xff*", "é*", "[é]", "[\xc3]*",
	"[[:alpha:]]", "[[:punct:]]*", "[[:upper:]]*", "[[:digit:][:upper:]]*", "[[:space:]]*", "*[[:space:]]",
	"*", "**", "a/**", "**/b", "x/", "/x/", "/x", "a/*", "a/*/b", "a/**/d", "a/c/**/b", "**/*.log",
	"*.txt", "!*.txt", "!doc/", "!a/x", "!/build", "!a/x/b", "src/**", "**/build/", "build/**",
	"c.txt/", "*.b.*", "a**", "a/x**", "a**/b", "a/c**/b", "*/b", "x/y", "/x/y", "keep", "keep/",
	"!keep", "doc/**/*.txt", "doc/*", "doc/sub/", "!doc/sub/c.txt", "!doc/sub", `a\/b`, `a/x\/b`,
	`**\/b`, "***/b", "a/***", "/a/b/", "**/", "!**/", "\\*", "Y.*", "y.*", "*.TXT",
	"*[[:cntrl:]]*", "*[[:space:]]*", "*[[:blank:]]*", "*[[:print:]]", "*[[:graph:]]",
	"[[:xdigit:]]*", "[[:lower:]]*", "[[:alnum:]]*", "[![:alpha:]]*", "[[]*", "[[:]*", "[[:a]*",
	"[a-c-e]", `[\]]*`, `[a\-c]`, "[]-]*", "[--0]*", "[x-a]", "*-*", "[[:upper:]-a]*",
}

// neverPatterns are patterns git accepts but can never match; New must
// refuse them.
var neverPatterns = []string{"[abc", "keep.log\\", "[[:foo:]]*", "[[::]]*", "[a-\\", "a/[b", "*/[[:alpha:]"}

func TestMatchAgreesWithGit(t *testing.T) {
	tree := oracleTree()
	o := newGitOracle(t, tree)
	var paths []string
	isDir := map[string]bool{}
	for _, n := range tree {
		paths = append(paths, n.path)
		isDir[n.path] = n.isDir
	}
	check := func(t *testing.T, patterns []string) {
		t.Helper()
		s, err := New(patterns)
		if err != nil {
			t.Fatalf("New(%q): %v", patterns, err)
		}
		want, why := o.ignored(t, patterns, paths)
		bad := 0
		for _, p := range paths {
			if got := s.Match(p, isDir[p]); got != want[p] {
				bad++
				if bad <= 5 {
					t.Errorf("patterns %q, path %q (dir %v): Match = %v, git says %v (git's deciding pattern %q)", patterns, p, isDir[p], got, want[p], why[p])
				}
			}
		}
		if bad > 5 {
			t.Errorf("patterns %q: %d more disagreements", patterns, bad-5)
		}
	}
	for _, p := range oraclePatterns {
		t.Run(fmt.Sprintf("one/%q", p), func(t *testing.T) { check(t, []string{p}) })
	}
	for _, p := range neverPatterns {
		t.Run(fmt.Sprintf("never/%q", p), func(t *testing.T) {
			if _, err := New([]string{p}); err == nil {
				t.Errorf("New(%q) accepted a pattern git never matches", p)
			}
			want, why := o.ignored(t, []string{p}, paths)
			for _, path := range paths {
				if want[path] {
					t.Errorf("git ignores %q under %q (%q): the pattern is not dead after all", path, p, why[path])
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		k := 1 + rng.IntN(4)
		set := make([]string, k)
		for j := range set {
			set[j] = oraclePatterns[rng.IntN(len(oraclePatterns))]
		}
		t.Run(fmt.Sprintf("mix%d/%s", i, strings.Join(set, ",")), func(t *testing.T) { check(t, set) })
	}
}
