// Package selector matches slash-separated relative paths against the
// gitignore-syntax selectors given to --exclude and --protect, and
// guarantees git's answer: for every pattern list and path, Match agrees
// with `git check-ignore --no-index` run with those patterns in the
// repository root's .gitignore (the differential test holds it to that).
//
// The semantics are git's (dir.c and wildmatch.c), byte for byte:
//
//   - The last pattern that matches a path decides; a pattern starting with
//     "!" re-includes what an earlier pattern selected.
//   - A pattern with no slash (other than a trailing one) matches the last
//     component at any depth; any other pattern matches the whole path from
//     the base, and a leading "/" only anchors it.
//   - A trailing "/" makes a pattern match directories only.
//   - "*" and "?" and "[...]" never match "/"; "**" matches across
//     directories when it stands alone between slashes (or at either end).
//     Classes take "!" or "^" for negation, ranges, and the POSIX names
//     ([:alpha:] and the rest, ASCII only).
//   - "\" quotes the next byte; unescaped trailing spaces are dropped.
//   - Names are bytes, not runes: "?" matches one byte of a multi-byte
//     UTF-8 character, as in git.
//   - Once a directory is selected, everything beneath it is selected, and
//     a negation cannot re-include a path inside it (Match). MatchSelf
//     leaves that rule to a tree walk that does not descend into selected
//     directories.
//
// # Why not go-git's matcher
//
// go-git's plumbing/format/gitignore was the first candidate. Run through
// the same differential test it disagreed with git on 27 of 95 patterns, and the gaps sit in its per-component matcher
// (path/filepath.Match), where a wrapper cannot reach them: "?" and classes
// match a whole UTF-8 rune where git matches one byte ("?.txt" selects
// "é.txt" in go-git, not in git); "[!a-c]" is not a negated class; "[a-]"
// and POSIX classes such as "[[:alpha:]]" are rejected as bad patterns;
// "a/**" also selects "a" itself, so a later "!a/keep" cannot re-include;
// "**" glued to a name ("a**/b", "a/x**") and escaped slashes ("a\/b")
// never match. This package therefore implements git's rules itself and
// keeps git as its test oracle.
//
// New refuses patterns that git would silently never match (an unclosed
// "[", a trailing lone "\", an unknown [:class:]) and lines that git would
// read as comments or blanks: for --protect, a selector that quietly
// protects nothing would turn a safety rule off.
package selector
