// Package merge three-way merges what a transaction changed with what the
// base changed under it since the transaction opened: regular-file content
// line by line (Text), and permission modes (Mode). It guarantees that a
// text merge succeeds only where `git merge-file` with git's default
// settings merges cleanly, and then yields the very bytes git would; on a
// conflict it yields nothing, never a partial or marked-up result.
//
// # Why it reproduces git's diff
//
// A three-way merge is only as good as the two-way diffs beneath it: two
// edits conflict when their hunks overlap or touch, and where a hunk lies
// depends on how the diff aligned repeated lines. A different, equally
// correct diff algorithm would merge some inputs that git refuses, and
// merge others differently. So the line diff here follows git's xdiff as
// git merge-file runs it: lines compared as exact bytes (a CRLF line
// differs from an LF one, and a last line without a newline from the same
// line with one); the ends both versions share trimmed; lines without a
// partner, and noisy repeated lines among them, left out of the search;
// Myers' bidirectional search with xdiff's cost cut-offs; and groups of
// changed lines slid to the same resting places. The merge then applies
// git's rules: hunks that overlap or merely touch — edits to adjacent
// lines, two insertions at one point, an insertion next to an edit —
// conflict, unless both sides made the very same change; a side that
// changed nothing yields the other side verbatim.
//
// # Where it may disagree with git
//
// The tests hold Text to the installed git: on generated inputs they
// require identical bytes whenever both merge and no clean merge where git
// conflicts, and they compare the line diff itself with git's hunk by hunk,
// on inputs large enough to reach every cut-off; the fuzz target reports
// any disagreement at all. No disagreement is known. Should a future git
// align some input differently, the one direction the differential test
// tolerates, up to a small documented rate, is a conflict where git
// merges: a spurious refusal can be retried by hand, a wrong merge cannot
// be taken back.
//
// Text also refuses, by design, some input git would take. Content with a
// NUL byte in its first 8000 bytes is binary to git too (ErrNotText).
// Content over MaxTextSize or MaxTextLines (ErrNotText), and versions whose
// alignment would cost more than a fixed work limit (ErrTooCostly), are
// refused because the merge runs under the base's commit lock: git would
// spend minutes, and gigabytes, on megabytes of short lines drawn from a
// handful of values, and so would this.
// Each of these errors means "cannot merge this path", not a failure.
//
// Mode follows git's rule for modes: a side that kept the ancestor's mode
// yields to the other; equal changes agree; different changes conflict.
package merge
