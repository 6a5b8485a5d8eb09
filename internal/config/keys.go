package config

import (
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// keyLine finds the line that defines key in a TOML document the decoder
// accepted, or the line of its nearest defined ancestor (a key inside an
// inline table), or 0. The decoder keeps key positions to itself, so this
// scans the lines: table headers set the prefix, and lines inside
// multi-line strings and arrays are skipped.
func keyLine(src string, key toml.Key) int {
	best, bestLen := 0, 0
	var table []string
	inString := "" // the open multi-line string's delimiter
	depth := 0     // open [ and { outside strings
	for i, line := range strings.Split(src, "\n") {
		start := depth == 0 && inString == ""
		inString, depth = scanLine(line, inString, depth)
		if !start {
			continue
		}
		s := strings.TrimSpace(line)
		var k []string
		switch {
		case strings.HasPrefix(s, "[["):
			table, _ = parseKey(strings.TrimSpace(s[2:]))
			k = table
		case strings.HasPrefix(s, "["):
			table, _ = parseKey(strings.TrimSpace(s[1:]))
			k = table
		default:
			local, rest := parseKey(s)
			if len(local) == 0 || !strings.HasPrefix(strings.TrimSpace(rest), "=") {
				continue
			}
			k = append(slices.Clone(table), local...)
		}
		n := commonPrefix(k, key)
		if n == len(key) && len(k) == len(key) {
			return i + 1
		}
		if n == len(k) && n > bestLen {
			best, bestLen = i+1, n
		}
	}
	return best
}

func commonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// parseKey reads a dotted key (bare, "basic" or 'literal' pieces) from the
// start of s and returns it with what follows.
func parseKey(s string) ([]string, string) {
	var k []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return k, s
		}
		var piece string
		switch s[0] {
		case '"':
			end := 1
			var b strings.Builder
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' && end+1 < len(s) {
					end++
				}
				b.WriteByte(s[end])
				end++
			}
			if end >= len(s) {
				return nil, s
			}
			piece, s = b.String(), s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, s
			}
			piece, s = s[1:end+1], s[end+2:]
		default:
			end := 0
			for end < len(s) && isBare(s[end]) {
				end++
			}
			if end == 0 {
				return k, s
			}
			piece, s = s[:end], s[end:]
		}
		k = append(k, piece)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return k, s
		}
		s = s[1:]
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// scanLine follows strings, brackets and comments through one line and
// returns the state at its end: the open multi-line string's delimiter and
// the bracket depth.
func scanLine(line, inString string, depth int) (string, int) {
	for i := 0; i < len(line); i++ {
		if inString != "" {
			if inString == `"""` && line[i] == '\\' {
				i++
				continue
			}
			if strings.HasPrefix(line[i:], inString) {
				i += len(inString) - 1
				inString = ""
			}
			continue
		}
		switch c := line[i]; {
		case c == '#':
			return inString, depth
		case strings.HasPrefix(line[i:], `"""`), strings.HasPrefix(line[i:], `'''`):
			inString = line[i : i+3]
			i += 2
		case c == '"':
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' {
					i++
				}
			}
		case c == '\'':
			for i++; i < len(line) && line[i] != '\''; i++ {
			}
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return inString, depth
}

// splitKey turns a dotted key of known, bare pieces into a toml.Key.
func splitKey(s string) toml.Key { return strings.Split(s, ".") }
