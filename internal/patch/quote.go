package patch

import (
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
