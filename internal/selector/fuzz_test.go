package selector

import (
	"strings"
	"testing"
)

// FuzzMatch checks, for any pattern and path, that nothing panics, that
// Match is exactly "MatchSelf of the path or of an ancestor directory", and
// that the compiled automaton agrees with refMatch, a memoised recursive
// reading of git's wildmatch rules straight off the pattern text. Agreement
// with git itself is TestMatchAgreesWithGit's job: running git per input
// would make fuzzing a thousand times slower.
func FuzzMatch(f *testing.F) {
	paths := []string{"a", "a/b", "a/x/y/b", "doc/sub/c.txt", "keep.log", "é.txt", "\xff/!bang", "build/x", "trail "}
	for i, p := range oraclePatterns {
		f.Add(p, paths[i%len(paths)], i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, pattern, path string, isDir bool) {
		if len(pattern) > 64 || len(path) > 128 {
			return
		}
		s, err := New([]string{pattern})
		if err != nil {
			if s != nil {
				t.Fatalf("New(%q) returned a set with its error", pattern)
			}
			return
		}
		match, self := s.Match(path, isDir), s.MatchSelf(path, isDir)
		if self && !match {
			t.Fatalf("pattern %q, path %q: MatchSelf without Match", pattern, path)
		}
		anc := false
		for i := 1; i < len(path); i++ {
			if path[i] == '/' && s.MatchSelf(path[:i], true) {
				anc = true
			}
		}
		if match != (self || anc) {
			t.Fatalf("pattern %q, path %q: Match %v, MatchSelf %v, an ancestor selected %v", pattern, path, match, self, anc)
		}
		r := s.rules[0]
		name := path
		if r.anyDepth {
			name = path[strings.LastIndexByte(path, '/')+1:]
		}
		want := path != "" && (isDir || !r.dirOnly) && refMatch(r.body, len(r.prefix), name) && !r.negate
		if self != want {
			t.Fatalf("pattern %q (body %q, prefix %q), path %q, dir %v: MatchSelf %v, reference %v", pattern, r.body, r.prefix, path, isDir, self, want)
		}
	})
}

// refMatch reports whether glob p matches all of text. A "**" counts as
// standing alone when it follows a slash or starts at globStart, where git's
// literal prefix ends.
func refMatch(p string, globStart int, text string) bool {
	memo := map[[2]int]bool{}
	var m func(pi, ti int) bool
	m = func(pi, ti int) bool {
		key := [2]int{pi, ti}
		if v, ok := memo[key]; ok {
			return v
		}
		var res bool
		switch {
		case pi == len(p):
			res = ti == len(text)
		case p[pi] == '*':
			j := pi
			for j < len(p) && p[j] == '*' {
				j++
			}
			crossing := j-pi >= 2 && (pi == globStart || p[pi-1] == '/') &&
				(j == len(p) || p[j] == '/' || strings.HasPrefix(p[j:], `\/`))
			if crossing && j < len(p) && p[j] == '/' && m(j+1, ti) {
				res = true
				break
			}
			for k := ti; k <= len(text); k++ {
				if m(j, k) {
					res = true
					break
				}
				if k < len(text) && text[k] == '/' && !crossing {
					break
				}
			}
		case ti == len(text):
			res = false
		case p[pi] == '\\':
			res = pi+1 < len(p) && text[ti] == p[pi+1] && m(pi+2, ti+1)
		case p[pi] == '?':
			res = text[ti] != '/' && m(pi+1, ti+1)
		case p[pi] == '[':
			in, next, ok := refClass(p, pi, text[ti])
			res = ok && in && text[ti] != '/' && m(next, ti+1)
		default:
			res = text[ti] == p[pi] && m(pi+1, ti+1)
		}
		memo[key] = res
		return res
	}
	return m(0, 0)
}

// refClass decides byte c against the bracket expression at p[open],
// following wildmatch.c's loop: the first member may be "]", a "-" makes a
// range only between two members, and "[:" without a matching ":]" is a
// plain "[".
func refClass(p string, open int, c byte) (in bool, next int, ok bool) {
	i := open + 1
	neg := i < len(p) && (p[i] == '!' || p[i] == '^')
	if neg {
		i++
	}
	var prev byte // 0: no member to start a range from; names hold no NUL
	matched := false
	for first := true; ; first = false {
		if i >= len(p) {
			return false, 0, false
		}
		ch := p[i]
		if ch == ']' && !first {
			return matched != neg, i + 1, true
		}
		switch {
		case ch == '\\':
			if i+1 >= len(p) {
				return false, 0, false
			}
			i++
			ch = p[i]
			matched = matched || c == ch
		case ch == '-' && prev != 0 && i+1 < len(p) && p[i+1] != ']':
			i++
			hi := p[i]
			if hi == '\\' {
				if i+1 >= len(p) {
					return false, 0, false
				}
				i++
				hi = p[i]
			}
			matched = matched || (prev <= c && c <= hi)
			ch = 0
		case ch == '[' && strings.HasPrefix(p[i:], "[:"):
			end := strings.IndexByte(p[i+2:], ']')
			if end < 0 {
				return false, 0, false
			}
			name := p[i+2 : i+2+end]
			if !strings.HasSuffix(name, ":") {
				matched = matched || c == '['
				break
			}
			name = strings.TrimSuffix(name, ":")
			in, known := refPosix(name, c)
			if !known {
				return false, 0, false
			}
			matched = matched || in
			i += 2 + end
			ch = 0
		default:
			matched = matched || c == ch
		}
		prev = ch
		i++
	}
}

func refPosix(name string, c byte) (in, known bool) {
	alpha := strings.IndexByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", c) >= 0
	digit := '0' <= c && c <= '9'
	switch name {
	case "alnum":
		return alpha || digit, true
	case "alpha":
		return alpha, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c <= 31 || c == 127, true
	case "digit":
		return digit, true
	case "graph":
		return c > 32 && c < 127, true
	case "lower":
		return 'a' <= c && c <= 'z', true
	case "print":
		return c >= 32 && c < 127, true
	case "punct":
		return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0, true
	case "space":
		return strings.IndexByte(" \t\n\r", c) >= 0, true
	case "upper":
		return 'A' <= c && c <= 'Z', true
	case "xdigit":
		return digit || strings.IndexByte("abcdefABCDEF", c) >= 0, true
	}
	return false, false
}
