package selector

import (
	"fmt"
	"strings"
)

// Set is an ordered list of gitignore-syntax patterns. The zero value and
// a nil *Set select nothing.
type Set struct {
	patterns []string
	rules    []rule
}

// rule is one compiled pattern.
type rule struct {
	negate  bool
	dirOnly bool
	// anyDepth: the pattern has no slash, so it is matched against the last
	// path component at every depth rather than against the whole path.
	anyDepth bool
	// prefix is the pattern's leading run of bytes with no glob meaning; it
	// is compared as is, and glob matches what follows it.
	prefix string
	glob   []token
	body   string // the pattern without "!", trailing spaces, leading and trailing "/"
}

// New compiles patterns, in order: a later pattern overrides an earlier one.
// It refuses, naming the pattern, what git would read as a blank line or a
// comment, a pattern with a NUL byte, and a pattern that could never match
// anything.
func New(patterns []string) (*Set, error) {
	s := &Set{patterns: append([]string(nil), patterns...)}
	for _, p := range patterns {
		r, err := compile(p)
		if err != nil {
			return nil, fmt.Errorf("selector %q: %w", p, err)
		}
		s.rules = append(s.rules, r)
	}
	return s, nil
}

func compile(p string) (rule, error) {
	var r rule
	switch {
	case strings.TrimSpace(p) == "":
		return r, fmt.Errorf("it is empty")
	case strings.IndexByte(p, 0) >= 0:
		return r, fmt.Errorf("it holds a NUL byte, which no path can")
	case p[0] == '#':
		return r, fmt.Errorf("gitignore reads it as a comment (write \\# to match a name starting with #)")
	}
	body := trimTrailingSpaces(p)
	if body != "" && body[0] == '!' {
		r.negate = true
		body = body[1:]
	}
	if strings.HasSuffix(body, "/") {
		r.dirOnly = true
		body = body[:len(body)-1]
	}
	r.anyDepth = !strings.Contains(body, "/")
	if !r.anyDepth {
		// A leading slash only anchors: every slash-holding pattern already
		// matches from the base.
		body = strings.TrimPrefix(body, "/")
	}
	if body == "" {
		return r, fmt.Errorf("it names no path")
	}
	globAt := 0
	if !r.anyDepth {
		globAt = strings.IndexAny(body, `*?[\`)
		if globAt < 0 {
			globAt = len(body)
		}
	}
	r.body = body
	r.prefix = body[:globAt]
	glob, err := compileGlob(body[globAt:])
	if err != nil {
		return r, fmt.Errorf("git would never match it: %w", err)
	}
	r.glob = glob
	return r, nil
}

// trimTrailingSpaces drops the unescaped spaces at the end of p, as git does
// for every line of a .gitignore: "a\ " keeps its escaped space.
func trimTrailingSpaces(p string) string {
	end := len(p)
	spaceFrom := -1
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case ' ':
			if spaceFrom < 0 {
				spaceFrom = i
			}
		case '\\':
			i++
			if i >= len(p) {
				// A lone trailing backslash: git leaves the line alone.
				return p
			}
			spaceFrom = -1
		default:
			spaceFrom = -1
		}
	}
	if spaceFrom >= 0 {
		end = spaceFrom
	}
	return p[:end]
}

// Len is the number of patterns.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.patterns)
}

// Patterns returns the patterns as given to New.
func (s *Set) Patterns() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.patterns...)
}

// Match reports whether path is selected: by the patterns themselves, or
// because one of its ancestor directories is. path is slash-separated and
// relative to the base ("a/b/c.txt"); isDir says whether it names a
// directory.
func (s *Set) Match(path string, isDir bool) bool {
	if s == nil || len(s.rules) == 0 {
		return false
	}
	// git checks the leading directories first and stops at the first one
	// that is selected: nothing inside it can be re-included.
	for i := 0; i < len(path); i++ {
		if path[i] == '/' && i > 0 && s.decide(path[:i], true) {
			return true
		}
	}
	return s.decide(path, isDir)
}

// MatchSelf reports whether the patterns select path itself, without
// regard to its ancestors. A walk that skips the directories it found
// selected, and so never asks about what lies beneath them, gets Match's
// answers from MatchSelf at a fraction of the cost.
func (s *Set) MatchSelf(path string, isDir bool) bool {
	if s == nil {
		return false
	}
	return s.decide(path, isDir)
}

// decide applies the last pattern that matches path.
func (s *Set) decide(path string, isDir bool) bool {
	if path == "" {
		return false
	}
	base := path[strings.LastIndexByte(path, '/')+1:]
	for i := len(s.rules) - 1; i >= 0; i-- {
		r := &s.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		name := path
		if r.anyDepth {
			name = base
		}
		if strings.HasPrefix(name, r.prefix) && matchGlob(r.glob, name[len(r.prefix):]) {
			return !r.negate
		}
	}
	return false
}
