package patch

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// This file is a strict reader of the patches Write produces, independent
// of git: it parses each header, applies text hunks exactly at their stated
// lines, decodes binary literals and checks every blob id. Fuzzing uses it
// where running git per input would be too slow.

type mblob struct {
	mode uint32
	data string
}

type parser struct {
	lines []string
	i     int
}

func (p *parser) peek() (string, bool) {
	if p.i >= len(p.lines) {
		return "", false
	}
	return p.lines[p.i], true
}

func (p *parser) next() (string, error) {
	l, ok := p.peek()
	if !ok {
		return "", fmt.Errorf("unexpected end of patch")
	}
	p.i++
	return l, nil
}

var (
	indexLine = regexp.MustCompile(`^index ([0-9a-f]{40})\.\.([0-9a-f]{40})(?: ([0-7]{6}))?\n$`)
	hunkHead  = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n$`)
)

// unquote reverses git's C-style quoting of a whole header name.
func unquote(s string) (string, error) {
	if !strings.HasPrefix(s, `"`) {
		return s, nil
	}
	name, rest, err := Unquote(s)
	if err == nil && rest != "" {
		err = fmt.Errorf("unescaped quote in %q", s)
	}
	return name, err
}

// headerPath reads the path from a `diff --git A B` line whose two names
// are the same path.
func headerPath(rest string) (string, error) {
	if strings.HasPrefix(rest, `"`) {
		// Quoted: find the closing quote of the first name.
		end := -1
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\\' {
				i++
				continue
			}
			if rest[i] == '"' {
				end = i
				break
			}
		}
		if end < 0 || !strings.HasPrefix(rest[end+1:], " ") {
			return "", fmt.Errorf("bad header names %q", rest)
		}
		a, err := unquote(rest[:end+1])
		if err != nil {
			return "", err
		}
		b, err := unquote(rest[end+2:])
		if err != nil {
			return "", err
		}
		if !strings.HasPrefix(a, "a/") || b != "b/"+a[2:] {
			return "", fmt.Errorf("header names disagree: %q", rest)
		}
		return a[2:], nil
	}
	n := (len(rest) - 5) / 2
	if n < 1 || rest[:2] != "a/" || rest[2+n:] != " b/"+rest[2:2+n] {
		return "", fmt.Errorf("header names disagree: %q", rest)
	}
	return rest[2 : 2+n], nil
}

// applyPatch applies patch to tr (path → blob) in place.
func applyPatch(tr map[string]mblob, patch string) error {
	p := &parser{lines: strings.SplitAfter(patch, "\n")}
	if p.lines[len(p.lines)-1] == "" {
		p.lines = p.lines[:len(p.lines)-1]
	}
	for {
		l, ok := p.peek()
		if !ok {
			return nil
		}
		if err := applyOne(tr, p); err != nil {
			return fmt.Errorf("at line %d (%q): %w", p.i, l, err)
		}
	}
}

func applyOne(tr map[string]mblob, p *parser) error {
	l, _ := p.next()
	rest, ok := strings.CutPrefix(l, "diff --git ")
	if !ok || !strings.HasSuffix(rest, "\n") {
		return fmt.Errorf("want a diff --git header")
	}
	path, err := headerPath(strings.TrimSuffix(rest, "\n"))
	if err != nil {
		return err
	}
	var oldMode, newMode uint32
	isNew, isDel := false, false
	cur, exists := tr[path]
	var oldID, newID string
	parseMode := func(s string) (uint32, error) {
		v, err := strconv.ParseUint(strings.TrimSuffix(s, "\n"), 8, 32)
		if err != nil || (v != modeFile && v != modeExec && v != modeSymlink) {
			return 0, fmt.Errorf("bad mode %q", s)
		}
		return uint32(v), nil
	}
	for {
		l, ok := p.peek()
		if !ok || strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "--- ") || l == "GIT binary patch\n" {
			break
		}
		p.i++
		switch {
		case strings.HasPrefix(l, "new file mode "):
			isNew = true
			if newMode, err = parseMode(l[len("new file mode "):]); err != nil {
				return err
			}
		case strings.HasPrefix(l, "deleted file mode "):
			isDel = true
			if oldMode, err = parseMode(l[len("deleted file mode "):]); err != nil {
				return err
			}
		case strings.HasPrefix(l, "old mode "):
			if oldMode, err = parseMode(l[len("old mode "):]); err != nil {
				return err
			}
		case strings.HasPrefix(l, "new mode "):
			if newMode, err = parseMode(l[len("new mode "):]); err != nil {
				return err
			}
		case strings.HasPrefix(l, "index "):
			m := indexLine.FindStringSubmatch(l)
			if m == nil {
				return fmt.Errorf("bad index line %q", l)
			}
			oldID, newID = m[1], m[2]
			if m[3] != "" {
				if oldMode, err = parseMode(m[3]); err != nil {
					return err
				}
				newMode = oldMode
			}
		default:
			return fmt.Errorf("unexpected header line %q", l)
		}
	}
	if isNew == exists {
		return fmt.Errorf("%q: new=%v but exists=%v", path, isNew, exists)
	}
	if !isNew && cur.mode != oldMode {
		return fmt.Errorf("%q: patch says old mode %o, tree has %o", path, oldMode, cur.mode)
	}
	data := cur.data
	if oldID != "" && blobID([]byte(data)) != oldID && !(isNew && oldID == strings.Repeat("0", 40)) {
		return fmt.Errorf("%q: old blob id %s does not match", path, oldID)
	}
	l, ok = p.peek()
	switch {
	case ok && l == "GIT binary patch\n":
		p.i++
		fwd, err := readLiteral(p)
		if err != nil {
			return err
		}
		rev, err := readLiteral(p)
		if err != nil {
			return err
		}
		if rev != data {
			return fmt.Errorf("%q: reverse literal is not the old content", path)
		}
		data = fwd
	case ok && strings.HasPrefix(l, "--- "):
		p.i++
		l2, err := p.next()
		if err != nil || !strings.HasPrefix(l2, "+++ ") {
			return fmt.Errorf("want +++ after ---")
		}
		wantOld, wantNew := "--- "+quotePrefixed("a/", path), "+++ "+quotePrefixed("b/", path)
		if isNew {
			wantOld = "--- /dev/null"
		}
		if isDel {
			wantNew = "+++ /dev/null"
		}
		if strings.TrimRight(l, "\t\n") != wantOld || strings.TrimRight(l2, "\t\n") != wantNew {
			return fmt.Errorf("%q: file lines %q %q", path, l, l2)
		}
		if data, err = applyHunks(p, data); err != nil {
			return fmt.Errorf("%q: %w", path, err)
		}
	}
	if newID != "" && !isDel && blobID([]byte(data)) != newID {
		return fmt.Errorf("%q: result does not match new blob id %s", path, newID)
	}
	if isDel {
		if data != "" {
			return fmt.Errorf("%q: deletion leaves %q", path, data)
		}
		delete(tr, path)
		return nil
	}
	if newMode == 0 {
		return fmt.Errorf("%q: no mode", path)
	}
	tr[path] = mblob{newMode, data}
	return nil
}

func readLiteral(p *parser) (string, error) {
	l, err := p.next()
	if err != nil {
		return "", err
	}
	n, ok := strings.CutPrefix(strings.TrimSuffix(l, "\n"), "literal ")
	if !ok {
		return "", fmt.Errorf("want literal, got %q", l)
	}
	size, err := strconv.Atoi(n)
	if err != nil {
		return "", err
	}
	var deflated []byte
	for {
		l, err := p.next()
		if err != nil {
			return "", err
		}
		if l == "\n" {
			break
		}
		l = strings.TrimSuffix(l, "\n")
		c := l[0]
		var cnt int
		switch {
		case c >= 'A' && c <= 'Z':
			cnt = int(c-'A') + 1
		case c >= 'a' && c <= 'z':
			cnt = int(c-'a') + 27
		default:
			return "", fmt.Errorf("bad length char in %q", l)
		}
		if (len(l)-1)%5 != 0 || (len(l)-1)/5 != (cnt+3)/4 {
			return "", fmt.Errorf("line length disagrees with count: %q", l)
		}
		dec, err := decode85(l[1:])
		if err != nil {
			return "", err
		}
		deflated = append(deflated, dec[:cnt]...)
	}
	zr, err := zlib.NewReader(bytes.NewReader(deflated))
	if err != nil {
		return "", err
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return "", err
	}
	if len(out) != size {
		return "", fmt.Errorf("literal %d inflates to %d bytes", size, len(out))
	}
	return string(out), nil
}

func decode85(s string) ([]byte, error) {
	var out []byte
	for len(s) >= 5 {
		var acc uint64
		for i := range 5 {
			v := strings.IndexByte(base85, s[i])
			if v < 0 {
				return nil, fmt.Errorf("bad base85 char %q", s[i])
			}
			acc = acc*85 + uint64(v)
		}
		if acc > 0xffffffff {
			return nil, fmt.Errorf("base85 group overflows")
		}
		out = append(out, byte(acc>>24), byte(acc>>16), byte(acc>>8), byte(acc))
		s = s[5:]
	}
	return out, nil
}

func applyHunks(p *parser, data string) (string, error) {
	old := splitLines([]byte(data))
	var out []string
	pos := 0 // next old line not yet copied
	for {
		l, ok := p.peek()
		if !ok || !strings.HasPrefix(l, "@@ ") {
			break
		}
		p.i++
		m := hunkHead.FindStringSubmatch(l)
		if m == nil {
			return "", fmt.Errorf("bad hunk header %q", l)
		}
		num := func(s string, def int) int {
			if s == "" {
				return def
			}
			v, _ := strconv.Atoi(s)
			return v
		}
		os, oc, ns, nc := num(m[1], 0), num(m[2], 1), num(m[3], 0), num(m[4], 1)
		start := os - 1
		if oc == 0 {
			start = os
		}
		if start < pos || start > len(old) {
			return "", fmt.Errorf("hunk %q out of order or range", l)
		}
		out = append(out, old[pos:start]...)
		if nstart := ns - 1; nc == 0 && ns != len(out) || nc > 0 && nstart != len(out) {
			return "", fmt.Errorf("hunk %q: new start disagrees (at %d)", l, len(out))
		}
		pos = start
		seenOld, seenNew := 0, 0
		for seenOld < oc || seenNew < nc {
			l, err := p.next()
			if err != nil {
				return "", err
			}
			if l == "" {
				return "", fmt.Errorf("empty hunk line")
			}
			body := l[1:]
			if nl, _ := p.peek(); nl == "\\ No newline at end of file\n" {
				p.i++
				body = strings.TrimSuffix(body, "\n")
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(old) || old[pos] != body {
					return "", fmt.Errorf("line %d does not match %q", pos+1, l)
				}
				pos++
				seenOld++
				if l[0] == ' ' {
					out = append(out, body)
					seenNew++
				}
			case '+':
				out = append(out, body)
				seenNew++
			default:
				return "", fmt.Errorf("bad hunk line %q", l)
			}
		}
		if seenOld != oc || seenNew != nc {
			return "", fmt.Errorf("hunk %q: counts %d,%d", l, seenOld, seenNew)
		}
	}
	out = append(out, old[pos:]...)
	for i, l := range out[:max(0, len(out)-1)] {
		if !strings.HasSuffix(l, "\n") {
			return "", fmt.Errorf("line %d lacks a newline but is not the last", i+1)
		}
	}
	return strings.Join(out, ""), nil
}
