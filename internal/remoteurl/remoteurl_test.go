package remoteurl

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in, user, pass, bare, host string
		hasPass                    bool
	}{
		{"https://x-access-token:T0K%40N@h.example:8443/o/r.git", "x-access-token", "T0K@N", "https://h.example:8443/o/r.git", "https://h.example:8443", true},
		// What net/url refuses and git takes as it is.
		{"https://u:ghs^SECRET@h/r.git", "u", "ghs^SECRET", "https://h/r.git", "https://h", true},
		{"https://u:ghs%SECRET@h/r.git", "u", "ghs%SECRET", "https://h/r.git", "https://h", true},
		{"https://u:50%@h/r.git", "u", "50%", "https://h/r.git", "https://h", true},
		// The last '@' before the path ends the user information.
		{"https://u:p@ss@h/a@b", "u", "p@ss", "https://h/a@b", "https://h", true},
		{"HTTPS://TOKEN@h?x=1", "TOKEN", "", "HTTPS://h?x=1", "HTTPS://h", false},
		{"https://u:@[::1]:80/r", "u", "", "https://[::1]:80/r", "https://[::1]:80", true},
		{"ssh://git@h/r.git", "git", "", "ssh://h/r.git", "ssh://h", false},
		{"u:p^w@h:o/r.git", "u", "p^w", "h:o/r.git", "", true},
		{"git@github.com:o/r.git", "git", "", "github.com:o/r.git", "", false},
	} {
		u, ok := Split(c.in)
		if !ok {
			t.Errorf("Split(%q): no user information found", c.in)
			continue
		}
		pass, set := u.Password()
		if u.User() != c.user || pass != c.pass || set != c.hasPass || u.Bare() != c.bare || u.Host() != c.host {
			t.Errorf("Split(%q) = user %q pass %q (%v) bare %q host %q; want %q %q (%v) %q %q",
				c.in, u.User(), pass, set, u.Bare(), u.Host(), c.user, c.pass, c.hasPass, c.bare, c.host)
		}
	}
	for _, in := range []string{"origin", "https://h/r.git", "https://h/a@b", "https://h?u=a@b", "/srv/r.git", "./a@b:c", "/srv/a@b:c", "h:path@x", "1http://u:p@h/"} {
		if u, ok := Split(in); ok {
			t.Errorf("Split(%q) found user information %q", in, u.RawUser())
		}
	}
}

func TestSecret(t *testing.T) {
	for in, want := range map[string]bool{
		"https://TOKEN@h/r":      true,
		"https://u:p@h/r":        true,
		"https://git@h/r":        false,
		"git@h:r.git":            false,
		"git:p@h:r.git":          true,
		"ssh://git:pw@h:22/r":    true,
		"https://git:@h/r":       true,
		"https://x-token-auth@h": true,
	} {
		u, _ := Split(in)
		if got := u.Secret(); got != want {
			t.Errorf("Split(%q).Secret() = %v, want %v", in, got, want)
		}
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		"a%40b": "a@b", "a%4": "a%4", "%": "%", "%zz": "%zz", "%2f%2F": "//", "a%%41": "a%A",
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScrubText(t *testing.T) {
	in := "0000 1111 A U <a@x> 1 +0000\tpull http://u:pw^SECRET@h:8080/i.git main:pulled: storing head\n" +
		"2222 3333 A U <a@x> 1 +0000\tfetch https://git@h/r ssh://TOKEN@h/r\n"
	want := "0000 1111 A U <a@x> 1 +0000\tpull http://h:8080/i.git main:pulled: storing head\n" +
		"2222 3333 A U <a@x> 1 +0000\tfetch https://git@h/r ssh://h/r\n"
	got, changed := ScrubText(in)
	if got != want || !changed {
		t.Errorf("ScrubText =\n%q (%v)\nwant\n%q", got, changed, want)
	}
	if got, changed := ScrubText("clone: from https://h/r.git"); changed || got != "clone: from https://h/r.git" {
		t.Errorf("ScrubText changed a URL without credentials: %q", got)
	}
}

// FuzzSplit: whatever the input, Split does not panic, and the URL
// without its user information holds neither the user information nor
// more than the input.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"https://u:p@h/r", "u:p@h:r", "https://h/a@b", "x://@", "a@b:", "://@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, ok := Split(s)
		if !ok {
			return
		}
		info := s[u.start:u.at]
		if len(u.Bare()) != len(s)-len(info)-1 || !strings.HasPrefix(s, u.Bare()[:u.start]) {
			t.Errorf("Split(%q).Bare() = %q", s, u.Bare())
		}
		if u.Scheme != "" && !strings.HasPrefix(u.Host(), s[:u.start]) {
			t.Errorf("Split(%q).Host() = %q", s, u.Host())
		}
		_, _ = ScrubText(s)
	})
}
