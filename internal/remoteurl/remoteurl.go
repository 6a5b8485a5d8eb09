package remoteurl

import "strings"

// URL is a remote URL with user information, as Split found it.
type URL struct {
	raw string
	// Scheme is the scheme before "://", lower case; "" for an scp-like
	// address.
	Scheme string
	// userinfo is raw[start:at]; raw[at] is its '@'.
	start, at int
	// end is where the authority ends: the first '/', '?' or '#' after
	// the '@' (len(raw) when none), or, scp-like, the ':' before the
	// path.
	end int
}

// Split finds the user information in raw: ok when raw has any.
func Split(raw string) (URL, bool) {
	if i := strings.Index(raw, "://"); i > 0 && validScheme(raw[:i]) {
		start := i + 3
		auth := start + strings.IndexAny(raw[start:]+"/", "/?#")
		at := strings.LastIndexByte(raw[start:auth], '@')
		if at < 0 {
			return URL{}, false
		}
		at += start
		end := at + 1 + strings.IndexAny(raw[at+1:]+"/", "/?#")
		return URL{raw: raw, Scheme: strings.ToLower(raw[:i]), start: start, at: at, end: end}, true
	}
	// scp-like: [user@]host:path, the ':' before any '/'.
	slash := strings.IndexByte(raw+"/", '/')
	at := strings.LastIndexByte(raw[:slash], '@')
	if at <= 0 {
		return URL{}, false
	}
	colon := strings.IndexByte(raw[at+1:], ':')
	if colon < 0 || at+1+colon > slash {
		return URL{}, false
	}
	return URL{raw: raw, start: 0, at: at, end: at + 1 + colon}, true
}

// validScheme reports whether s is an RFC 3986 scheme: a letter, then
// letters, digits, '+', '-', '.'.
func validScheme(s string) bool {
	for i, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// RawUser and RawPassword are the user information's parts as written.
func (u URL) RawUser() string {
	info := u.raw[u.start:u.at]
	if i := strings.IndexByte(info, ':'); i >= 0 {
		return info[:i]
	}
	return info
}

// RawPassword is the password as written; set reports whether there is
// one (a ':' in the user information), even empty.
func (u URL) RawPassword() (pass string, set bool) {
	_, pass, set = strings.Cut(u.raw[u.start:u.at], ":")
	return pass, set
}

// User is the user, decoded as git decodes it.
func (u URL) User() string { return Unescape(u.RawUser()) }

// Password is the password, decoded as git decodes it.
func (u URL) Password() (string, bool) {
	p, set := u.RawPassword()
	return Unescape(p), set
}

// Secret reports whether the user information holds a secret: a password,
// or a user other than ssh's conventional "git" (a token is often the
// user alone, https://TOKEN@host).
func (u URL) Secret() bool {
	_, set := u.RawPassword()
	return set || u.RawUser() != "git"
}

// Bare is the URL without its user information.
func (u URL) Bare() string { return u.raw[:u.start] + u.raw[u.at+1:] }

// WithUserinfo is the URL with its user information replaced by info
// ("" drops it and its '@').
func (u URL) WithUserinfo(info string) string {
	if info == "" {
		return u.Bare()
	}
	return u.raw[:u.start] + info + u.raw[u.at:]
}

// Host is the credential context git matches credential.<url>.* against:
// scheme://host[:port]; "" for an scp-like address.
func (u URL) Host() string {
	if u.Scheme == "" {
		return ""
	}
	return u.raw[:u.start] + u.raw[u.at+1:u.end]
}

// Unescape decodes s as git's url_decode does: "%XX" with two hex digits
// is that byte; a '%' that is not followed by two is kept as it is.
func Unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// ScrubText takes the user information holding a secret (Secret) out of
// every scheme://... URL in text, a URL ending at white space; git writes
// URLs so in its messages (a reflog entry of `git pull URL` names it). It
// reports whether it changed anything.
func ScrubText(text string) (string, bool) {
	var b strings.Builder
	changed := false
	rest := text
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		j := i
		for j > 0 && isSchemeByte(rest[j-1]) {
			j--
		}
		end := i + strings.IndexAny(rest[i:]+" ", " \t\n\r")
		if u, ok := Split(rest[j:end]); ok && u.Scheme != "" && u.Secret() {
			b.WriteString(rest[:j])
			b.WriteString(u.Bare())
			changed = true
		} else {
			b.WriteString(rest[:end])
		}
		rest = rest[end:]
	}
	if !changed {
		return text, false
	}
	b.WriteString(rest)
	return b.String(), true
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}
