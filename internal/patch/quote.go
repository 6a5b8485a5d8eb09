package patch

import (
	"fmt"
	"strconv"
	"strings"
)

// needsQuote reports whether git, with core.quotePath=true, prints name in
// C-style quotes: for control characters, '"', '\\', DEL and every byte
// from 0x80 up. A space alone does not need quoting.
func needsQuote(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return true
		}
	}
	return false
}

// cquote quotes s exactly as git's quote_c_style does.
func cquote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				b.WriteByte('\\')
				o := strconv.FormatUint(uint64(c), 8)
				b.WriteString(strings.Repeat("0", 3-len(o)))
				b.WriteString(o)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quoteName is a path as git lists it (--name-status, --stat).
func quoteName(name string) string {
	if needsQuote(name) {
		return cquote(name)
	}
	return name
}

// quotePrefixed is a path with its a/ or b/ prefix as the patch headers
// print it: the prefix goes inside the quotes.
func quotePrefixed(prefix, name string) string {
	if needsQuote(name) {
		return cquote(prefix + name)
	}
	return prefix + name
}

// Unquote reads the C-quoted name that s starts with, as git writes one
// (the inverse of its quoting here), and returns the name and what follows
// the closing quote.
func Unquote(s string) (name, rest string, err error) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", fmt.Errorf("quoted name %q does not start with a quote", s)
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), s[i+1:], nil
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\':
			b.WriteByte(e)
		default:
			if i+3 > len(s) {
				return "", "", fmt.Errorf("short octal escape in %q", s)
			}
			v, err := strconv.ParseUint(s[i:i+3], 8, 8)
			if err != nil {
				return "", "", fmt.Errorf("bad escape in %q", s)
			}
			b.WriteByte(byte(v))
			i += 2
		}
	}
	return "", "", fmt.Errorf("unterminated quoted name %q", s)
}
