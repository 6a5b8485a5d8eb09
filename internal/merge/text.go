package merge

import (
	"bytes"
	"errors"
	"fmt"
)

// MaxTextSize is the largest version, in bytes, that IsText accepts. The
// merge runs while the base's commit lock is held and holds every line of
// the three versions in memory several times over; past this size a
// drifted file refuses rather than merges.
const MaxTextSize = 8 << 20

// MaxTextLines is the most lines a version IsText accepts may hold. The
// merge's memory follows the number of lines, not bytes: MaxTextSize of
// one-character lines would take gigabytes. Only content whose lines
// average under 8 bytes reaches this before MaxTextSize.
const MaxTextLines = 1 << 20

// maxSteps bounds the work of one Text call's line diffs. Realistic files
// — hundreds of thousands of lines with tens of thousands of edits — stay
// under a tenth of it; what exceeds it is content such as megabytes of
// lines drawn from a handful of values, where the search would run for
// minutes (git's too). About a second of work on a small machine.
const maxSteps = 100_000_000

// sniffLen is how much of a version IsText inspects for a NUL byte: git's
// buffer_is_binary looks at the same 8000 bytes.
const sniffLen = 8000

// ErrNotText is returned (wrapped) by Text when a version fails IsText.
var ErrNotText = errors.New("not a text file a line merge may touch")

// ErrTooCostly is returned (wrapped) by Text when aligning the versions
// would take more work than a merge under the commit lock may spend.
var ErrTooCostly = errors.New("the versions differ too much to align within the merge's work limit")

// IsText reports whether b is content a line merge may touch: no NUL byte
// in its first 8000 bytes (git's test for binary content, so that git
// merge-file refuses it too), at most MaxTextSize bytes and at most
// MaxTextLines lines (limits git sets far higher or not at all).
func IsText(b []byte) bool {
	return whyNotText(b) == ""
}

// whyNotText says why b fails IsText, or returns "".
func whyNotText(b []byte) string {
	if len(b) > MaxTextSize {
		return fmt.Sprintf("is %d bytes, over the %d-byte limit", len(b), MaxTextSize)
	}
	if bytes.IndexByte(b[:min(len(b), sniffLen)], 0) >= 0 {
		return "holds a NUL byte in its first 8000 bytes, so it is binary"
	}
	lines := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		lines++
	}
	if lines > MaxTextLines {
		return fmt.Sprintf("has %d lines, over the %d-line limit", lines, MaxTextLines)
	}
	return ""
}

// Text merges three versions of a regular file's content: ancestor is the
// version both sides started from, ours and theirs are the two edited ones.
// It returns the merged content and true when the edits do not overlap; on
// overlapping edits (a conflict) it returns nil and false. The result is the
// one `git merge-file -p ours ancestor theirs` prints with git's default
// settings, and a conflict is reported exactly where git reports one (see
// the package documentation for how that is kept so). An error wrapping
// ErrNotText means some version fails IsText, and one wrapping ErrTooCostly
// that the versions differ too much to align within a bounded time; either
// way nothing is merged, and the caller should refuse the path as one it
// cannot merge.
func Text(ancestor, ours, theirs []byte) (merged []byte, ok bool, err error) {
	return text(ancestor, ours, theirs, maxSteps)
}

func text(ancestor, ours, theirs []byte, budget int) ([]byte, bool, error) {
	for _, v := range []struct {
		name string
		b    []byte
	}{{"the ancestor version", ancestor}, {"our version", ours}, {"their version", theirs}} {
		if why := whyNotText(v.b); why != "" {
			return nil, false, fmt.Errorf("%s %s: %w", v.name, why, ErrNotText)
		}
	}
	anc, o, t := splitLines(ancestor), splitLines(ours), splitLines(theirs)
	h1, err := diffLines(anc, o, &budget)
	if err != nil {
		return nil, false, fmt.Errorf("diff the ancestor with our version: %w", err)
	}
	h2, err := diffLines(anc, t, &budget)
	if err != nil {
		return nil, false, fmt.Errorf("diff the ancestor with their version: %w", err)
	}
	// A side without changes yields the other side verbatim, as in git.
	if len(h1) == 0 {
		return append([]byte{}, theirs...), true, nil
	}
	if len(h2) == 0 {
		return append([]byte{}, ours...), true, nil
	}
	regions := combine(len(anc), o, t, h1, h2)
	for i := range regions {
		r := &regions[i]
		if r.mode != conflict {
			continue
		}
		// A conflict whose two sides read the same is both sides making the
		// same change. git checks this only when neither side is empty.
		if r.chg1 == 0 || r.chg2 == 0 || !sameLines(o[r.i1:r.i1+r.chg1], t[r.i2:r.i2+r.chg2]) {
			return nil, false, nil
		}
		r.mode = same
	}
	return assemble(o, t, regions), true, nil
}

// Region modes.
const (
	conflict   = iota // both sides changed it differently
	takeOurs          // only ours changed it
	takeTheirs        // only theirs changed it
	same              // both changed it alike
)

// region is a stretch of the merge: ancestor lines [i0, i0+chg0) stand as
// ours' lines [i1, i1+chg1) and theirs' lines [i2, i2+chg2).
type region struct {
	mode     int
	i0, chg0 int
	i1, chg1 int
	i2, chg2 int
}

// combine walks the two diffs from the ancestor in step. A hunk that ends
// before the other side's next one begins is taken as it is; hunks that
// overlap, or merely touch (one ending where the other begins), become a
// conflict spanning both, unless they are the very same change. Each region
// absorbs any later one that reaches back into it, so a chain of touching
// hunks is one conflict. This is git's rule: edits to adjacent lines, and
// insertions at one point, conflict.
func combine(nAnc int, o, t [][]byte, h1, h2 []hunk) []region {
	var out []region
	add := func(r region) {
		if n := len(out); n > 0 {
			m := &out[n-1]
			if r.i1 <= m.i1+m.chg1 || r.i2 <= m.i2+m.chg2 {
				if r.mode != m.mode {
					m.mode = conflict
				}
				m.chg0 = r.i0 + r.chg0 - m.i0
				m.chg1 = r.i1 + r.chg1 - m.i1
				m.chg2 = r.i2 + r.chg2 - m.i2
				return
			}
		}
		out = append(out, r)
	}
	p, q := 0, 0
	for p < len(h1) && q < len(h2) {
		x, y := h1[p], h2[q]
		if x.i1+x.chg1 < y.i1 {
			add(region{mode: takeOurs,
				i0: x.i1, chg0: x.chg1,
				i1: x.i2, chg1: x.chg2,
				i2: y.i2 - y.i1 + x.i1, chg2: x.chg1})
			p++
			continue
		}
		if y.i1+y.chg1 < x.i1 {
			add(region{mode: takeTheirs,
				i0: y.i1, chg0: y.chg1,
				i1: x.i2 - x.i1 + y.i1, chg1: y.chg1,
				i2: y.i2, chg2: y.chg2})
			q++
			continue
		}
		// Hunks that meet conflict unless they are the very same change.
		if x.i1 != y.i1 || x.chg1 != y.chg1 || x.chg2 != y.chg2 ||
			!sameLines(o[x.i2:x.i2+x.chg2], t[y.i2:y.i2+y.chg2]) {
			// Stretch both hunks to the union of the ancestor lines they
			// cover, each side carrying along its unchanged lines there.
			startGap := x.i1 - y.i1              // how much later ours starts
			endGap := startGap + x.chg1 - y.chg1 // how much later ours ends
			i0, i1, i2 := x.i1, x.i2, y.i2
			if startGap > 0 {
				i0 -= startGap
				i1 -= startGap
			} else {
				i2 += startGap
			}
			chg0 := x.i1 + x.chg1 - i0
			chg1 := x.i2 + x.chg2 - i1
			chg2 := y.i2 + y.chg2 - i2
			if endGap < 0 {
				chg0 -= endGap
				chg1 -= endGap
			} else {
				chg2 += endGap
			}
			add(region{mode: conflict, i0: i0, chg0: chg0, i1: i1, chg1: chg1, i2: i2, chg2: chg2})
		}
		e1, e2 := x.i1+x.chg1, y.i1+y.chg1
		if e1 >= e2 {
			q++
		}
		if e2 >= e1 {
			p++
		}
	}
	for ; p < len(h1); p++ {
		x := h1[p]
		add(region{mode: takeOurs,
			i0: x.i1, chg0: x.chg1,
			i1: x.i2, chg1: x.chg2,
			i2: x.i1 + len(t) - nAnc, chg2: x.chg1})
	}
	for ; q < len(h2); q++ {
		y := h2[q]
		add(region{mode: takeTheirs,
			i0: y.i1, chg0: y.chg1,
			i1: y.i1 + len(o) - nAnc, chg1: y.chg1,
			i2: y.i2, chg2: y.chg2})
	}
	return out
}

func sameLines(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// assemble writes the merged content: ours everywhere, except where only
// theirs changed. Regions where both changed alike are ours already.
func assemble(o, t [][]byte, regions []region) []byte {
	var buf bytes.Buffer
	write := func(lines [][]byte, from, to int) {
		for ; from < to; from++ {
			buf.Write(lines[from])
		}
	}
	i := 0
	for _, r := range regions {
		switch r.mode {
		case takeOurs:
			write(o, i, r.i1+r.chg1)
		case takeTheirs:
			write(o, i, r.i1)
			write(t, r.i2, r.i2+r.chg2)
		default:
			continue
		}
		i = r.i1 + r.chg1
	}
	write(o, i, len(o))
	if buf.Len() == 0 {
		return []byte{}
	}
	return buf.Bytes()
}
