package receipt

import "strings"

// The forms members must have, checked by hand rather than by regular
// expressions: compiling those cost every start of airlock (a run's
// launcher helper, which verifies no receipt, among them) about half a
// millisecond, or a settle as much when made on first use. forms_test.go
// holds each to the expression it stands for.

// isCommit: a commit id, `^([0-9a-f]{40}|[0-9a-f]{64})$`.
func isCommit(s string) bool { return (len(s) == 40 || len(s) == 64) && isHex(s) }

// isDigest: `^sha256:[0-9a-f]{64}$`.
func isDigest(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	return ok && len(h) == 64 && isHex(h)
}

// isTxID: `^[A-Za-z0-9._-]{1,64}$`.
func isTxID(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// isNat: an integer as Seal writes it, no sign on zero, no leading zeros,
// no fraction or exponent, so that a number has one spelling:
// `^(0|[1-9][0-9]*)$`.
func isNat(s string) bool {
	if s == "0" {
		return true
	}
	return s != "" && s[0] != '0' && isDigits(s)
}

// isInt: isNat, or its negation but for zero: `^(0|-?[1-9][0-9]*)$`.
func isInt(s string) bool {
	if t, neg := strings.CutPrefix(s, "-"); neg {
		return t != "0" && isNat(t)
	}
	return isNat(s)
}

// isFS: a file system's identity as internal/state names it:
// `^(fsid-[0-9a-f]{8}-[0-9a-f]{16}|uuid-[0-9a-f]{8}-[0-9a-f]{2,32}|dev-[0-9a-f]{16})$`.
func isFS(s string) bool {
	if t, ok := strings.CutPrefix(s, "fsid-"); ok {
		return len(t) == 8+1+16 && isHex(t[:8]) && t[8] == '-' && isHex(t[9:])
	}
	if t, ok := strings.CutPrefix(s, "uuid-"); ok {
		return len(t) >= 8+1+2 && len(t) <= 8+1+32 && isHex(t[:8]) && t[8] == '-' && isHex(t[9:])
	}
	if t, ok := strings.CutPrefix(s, "dev-"); ok {
		return len(t) == 16 && isHex(t)
	}
	return false
}

// isHex: lowercase hexadecimal digits only ("" is).
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// isDigits: decimal digits only ("" is).
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			return false
		}
	}
	return true
}
