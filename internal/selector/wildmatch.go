package selector

import (
	"fmt"
	"math/bits"
)

// tokKind is one element of a compiled glob.
type tokKind uint8

const (
	tokByte     tokKind = iota // one literal byte
	tokAny                     // "?": any byte but '/'
	tokClass                   // "[...]": a byte in the set (never '/')
	tokStar                    // "*": any run of bytes without '/'
	tokStarStar                // "**" at the end or before an escaped slash: any run of bytes
	tokDirs                    // "**/", first half: match nothing, or go on to tokDirsLoop
	tokDirsLoop                // "**/", second half: any run of bytes ending in '/'
)

type token struct {
	kind tokKind
	b    byte
	set  *byteSet
}

// byteSet is a set of bytes, one bit each.
type byteSet [4]uint64

func (s *byteSet) add(c byte)      { s[c>>6] |= 1 << (c & 63) }
func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }
func (s *byteSet) union(o *byteSet) {
	s[0], s[1], s[2], s[3] = s[0]|o[0], s[1]|o[1], s[2]|o[2], s[3]|o[3]
}
func (s *byteSet) addRange(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
}

// posixClasses are the [:name:] classes. git decides them with its own
// locale-independent ctype, ASCII only, so bytes >= 0x80 belong to none;
// "space" is git's set (tab, newline, carriage return, space), which leaves
// out vertical tab and form feed.
var posixClasses = func() map[string]*byteSet {
	m := map[string]*byteSet{}
	def := func(name string, in func(c byte) bool) {
		var s byteSet
		for c := 0; c < 128; c++ {
			if in(byte(c)) {
				s.add(byte(c))
			}
		}
		m[name] = &s
	}
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	isUpper := func(c byte) bool { return 'A' <= c && c <= 'Z' }
	isLower := func(c byte) bool { return 'a' <= c && c <= 'z' }
	isAlpha := func(c byte) bool { return isUpper(c) || isLower(c) }
	isGraph := func(c byte) bool { return 0x21 <= c && c <= 0x7e }
	def("alnum", func(c byte) bool { return isAlpha(c) || isDigit(c) })
	def("alpha", isAlpha)
	def("blank", func(c byte) bool { return c == ' ' || c == '\t' })
	def("cntrl", func(c byte) bool { return c < 0x20 || c == 0x7f })
	def("digit", isDigit)
	def("graph", isGraph)
	def("lower", isLower)
	def("print", func(c byte) bool { return 0x20 <= c && c <= 0x7e })
	def("punct", func(c byte) bool { return isGraph(c) && !isAlpha(c) && !isDigit(c) })
	def("space", func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' })
	def("upper", isUpper)
	def("xdigit", func(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') })
	return m
}()

// compileGlob turns a glob into tokens. The glob is matched from its first
// byte: a "**" at its very start counts as standing alone, as it does in
// git, which matches a pattern's literal prefix separately and hands only
// the rest to its glob matcher. An error means git would never match the
// pattern at all.
func compileGlob(p string) ([]token, error) {
	var toks []token
	for i := 0; i < len(p); {
		switch c := p[i]; c {
		case '\\':
			if i+1 >= len(p) {
				return nil, fmt.Errorf("it ends in a lone backslash (write \\\\ for a literal one)")
			}
			toks = append(toks, token{kind: tokByte, b: p[i+1]})
			i += 2
		case '?':
			toks = append(toks, token{kind: tokAny})
			i++
		case '*':
			j := i
			for j < len(p) && p[j] == '*' {
				j++
			}
			alone := j-i >= 2 && (i == 0 || p[i-1] == '/')
			switch {
			case alone && j == len(p):
				toks = append(toks, token{kind: tokStarStar})
				i = j
			case alone && p[j] == '/':
				// Two states, so that the zero-directory shortcut is
				// open only before the star has consumed anything.
				toks = append(toks, token{kind: tokDirs}, token{kind: tokDirsLoop})
				i = j + 1
			case alone && p[j] == '\\' && j+1 < len(p) && p[j+1] == '/':
				// git gives an escaped slash the slash-crossing star but
				// not the zero-directory shortcut; the "\/" that follows
				// is an ordinary literal.
				toks = append(toks, token{kind: tokStarStar})
				i = j
			default:
				toks = append(toks, token{kind: tokStar})
				i = j
			}
		case '[':
			set, next, err := compileClass(p, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tokClass, set: set})
			i = next
		default:
			toks = append(toks, token{kind: tokByte, b: c})
			i++
		}
	}
	return toks, nil
}

// compileClass reads the bracket expression that starts at p[open] and
// returns its set and the index just past its closing "]".
func compileClass(p string, open int) (*byteSet, int, error) {
	j := open + 1
	negated := false
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		negated = true
		j++
	}
	var set byteSet
	prev := -1 // the byte a following "-" would start a range from; -1: none
	for first := true; ; first = false {
		if j >= len(p) {
			return nil, 0, fmt.Errorf("its [ at byte %d is never closed (write \\[ for a literal one)", open)
		}
		c := p[j]
		if c == ']' && !first {
			j++
			break
		}
		switch {
		case c == '\\':
			if j+1 >= len(p) {
				return nil, 0, fmt.Errorf("its [ at byte %d is never closed (write \\[ for a literal one)", open)
			}
			set.add(p[j+1])
			prev = int(p[j+1])
			j += 2
		case c == '-' && prev >= 0 && j+1 < len(p) && p[j+1] != ']':
			j++
			hi := p[j]
			if hi == '\\' {
				if j+1 >= len(p) {
					return nil, 0, fmt.Errorf("its [ at byte %d is never closed (write \\[ for a literal one)", open)
				}
				j++
				hi = p[j]
			}
			set.addRange(byte(prev), hi)
			prev = -1
			j++
		case c == '[' && j+1 < len(p) && p[j+1] == ':':
			start := j + 2
			end := start
			for end < len(p) && p[end] != ']' {
				end++
			}
			if end >= len(p) {
				return nil, 0, fmt.Errorf("its [ at byte %d is never closed (write \\[ for a literal one)", open)
			}
			if end == start || p[end-1] != ':' {
				// Not "[:name:]" after all: the "[" is an ordinary member
				// and the bytes after it are read as members too.
				set.add('[')
				prev = '['
				j++
				continue
			}
			name := p[start : end-1]
			cls, ok := posixClasses[name]
			if !ok {
				return nil, 0, fmt.Errorf("[:%s:] is not a character class (alnum, alpha, blank, cntrl, digit, graph, lower, print, punct, space, upper, xdigit)", name)
			}
			set.union(cls)
			prev = -1
			j = end + 1
		default:
			set.add(c)
			prev = int(c)
			j++
		}
	}
	if negated {
		for k := range set {
			set[k] = ^set[k]
		}
	}
	set[0] &^= 1 << '/'
	return &set, j, nil
}

// matchGlob reports whether toks matches all of text. It runs the tokens as
// a nondeterministic automaton, one state per token, so that its cost is
// bounded by len(toks)*len(text) whatever the stars; a backtracking matcher
// can be made exponential by a pattern such as "*a*a*a*a*b".
func matchGlob(toks []token, text string) bool {
	n := len(toks) + 1 // state len(toks) is "all tokens matched"
	words := (n + 63) / 64
	var small [2][4]uint64
	var cur, next []uint64
	if words <= 4 {
		cur, next = small[0][:words], small[1][:words]
	} else {
		cur, next = make([]uint64, words), make([]uint64, words)
	}
	set := func(s []uint64, i int) { s[i>>6] |= 1 << (i & 63) }
	// closeOver adds the states reachable by matching nothing. Every such
	// move goes forward, so one ascending pass reaches them all.
	closeOver := func(s []uint64) {
		for i := 0; i < len(toks); i++ {
			if s[i>>6]&(1<<(i&63)) == 0 {
				continue
			}
			switch toks[i].kind {
			case tokStar, tokStarStar:
				set(s, i+1)
			case tokDirs:
				set(s, i+1)
				set(s, i+2)
			}
		}
	}
	set(cur, 0)
	closeOver(cur)
	for k := 0; k < len(text); k++ {
		c := text[k]
		clear(next)
		live := false
		for w, word := range cur {
			for word != 0 {
				i := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				if i >= len(toks) {
					continue
				}
				t := &toks[i]
				switch t.kind {
				case tokByte:
					if c == t.b {
						set(next, i+1)
						live = true
					}
				case tokAny:
					if c != '/' {
						set(next, i+1)
						live = true
					}
				case tokClass:
					if t.set.has(c) {
						set(next, i+1)
						live = true
					}
				case tokStar:
					if c != '/' {
						set(next, i)
						live = true
					}
				case tokStarStar:
					set(next, i)
					live = true
				case tokDirsLoop:
					set(next, i)
					if c == '/' {
						set(next, i+1)
					}
					live = true
				}
			}
		}
		if !live {
			return false
		}
		closeOver(next)
		cur, next = next, cur
	}
	last := len(toks)
	return cur[last>>6]&(1<<(last&63)) != 0
}
