// Package remoteurl finds the credentials in a git remote URL the way git
// reads them, not the way Go's net/url does: git takes a password that
// net/url refuses to parse (a '^', a '%' not followed by two hex digits),
// so a parser that gives up on such a URL leaves the password where
// airlock means to take it out (a staged .git/config, git's command line,
// a message).
//
// # Userinfo
//
// In scheme://userinfo@host/path, the user information runs from after
// "://" to the last '@' before the first '/', '?' or '#'; the user is what
// comes before its first ':', the password what follows. Both are
// percent-decoded as git decodes them: "%XX" with two hex digits is a
// byte, any other '%' is itself. An scp-like address (user:pass@host:path)
// carries no password git uses, but one written there is found too, so
// that it can be masked.
package remoteurl
