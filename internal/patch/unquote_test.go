package patch

import "testing"

// Unquote is the inverse of the quoting git (and Write) applies to names.
func TestUnquoteInvertsQuoting(t *testing.T) {
	for _, name := range []string{"plain", "a b", "tab\there", "nl\nx", `q"uote`, `back\slash`, "caf\xc3\xa9", "\xff\xfe", "\a\b\f\v\r\x7f"} {
		q := cquote(name)
		got, rest, err := Unquote(q + " tail")
		if err != nil || got != name || rest != " tail" {
			t.Errorf("Unquote(%q) = %q, %q, %v; want %q", q, got, rest, err, name)
		}
	}
	for _, bad := range []string{`plain`, `"unterminated`, `"\`, `"\9zz"`, `"\1"`} {
		if _, _, err := Unquote(bad); err == nil {
			t.Errorf("Unquote(%q) accepted a malformed name", bad)
		}
	}
}
