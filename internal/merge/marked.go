package merge

import (
	"bytes"
	"fmt"
)

// markerSize is the length of a conflict marker's run of '<', '|', '='
// or '>': git's default.
const markerSize = 7

// Labels name the three versions after a marked-up merge's conflict
// markers: `<<<<<<< Ours`, `||||||| Ancestor`, `>>>>>>> Theirs`.
type Labels struct {
	Ours, Ancestor, Theirs string
}

// Marked merges like Text, but where the edits overlap it writes both sides
// and the ancestor between conflict markers, as `git merge-file -p --diff3`
// does with git's default settings, byte for byte, and returns how many
// conflicts it marked (0: the result is a clean merge). It is for a person
// to resolve, so it refuses what Text refuses, for the same reasons.
//
// The diff3 style lowers git's merge level: a conflict whose two sides
// read the same stays marked here, where Text merges it. A caller that
// wants the clean merge where there is one calls Text first.
func Marked(ancestor, ours, theirs []byte, l Labels) ([]byte, int, error) {
	for _, v := range []struct {
		name string
		b    []byte
	}{{"the ancestor version", ancestor}, {"our version", ours}, {"their version", theirs}} {
		if why := whyNotText(v.b); why != "" {
			return nil, 0, fmt.Errorf("%s %s: %w", v.name, why, ErrNotText)
		}
	}
	budget := maxSteps
	anc, o, t := splitLines(ancestor), splitLines(ours), splitLines(theirs)
	h1, err := diffLines(anc, o, &budget)
	if err != nil {
		return nil, 0, fmt.Errorf("diff the ancestor with our version: %w", err)
	}
	h2, err := diffLines(anc, t, &budget)
	if err != nil {
		return nil, 0, fmt.Errorf("diff the ancestor with their version: %w", err)
	}
	if len(h1) == 0 {
		return append([]byte{}, theirs...), 0, nil
	}
	if len(h2) == 0 {
		return append([]byte{}, ours...), 0, nil
	}
	regions := combine(len(anc), o, t, h1, h2)
	var buf bytes.Buffer
	write := func(lines [][]byte, from, to int, crlf, addNL bool) {
		for k := from; k < to; k++ {
			buf.Write(lines[k])
		}
		// A side whose last line has no newline still ends before the
		// next marker, as git's xdl_recs_copy makes it.
		if addNL && to > from {
			if last := lines[to-1]; len(last) == 0 || last[len(last)-1] != '\n' {
				if crlf {
					buf.WriteByte('\r')
				}
				buf.WriteByte('\n')
			}
		}
	}
	marker := func(c byte, label string, crlf bool) {
		buf.Write(bytes.Repeat([]byte{c}, markerSize))
		if label != "" {
			buf.WriteByte(' ')
			buf.WriteString(label)
		}
		if crlf {
			buf.WriteByte('\r')
		}
		buf.WriteByte('\n')
	}
	i, n := 0, 0
	for _, r := range regions {
		switch r.mode {
		case takeOurs:
			write(o, i, r.i1+r.chg1, false, false)
		case takeTheirs:
			write(o, i, r.i1, false, false)
			write(t, r.i2, r.i2+r.chg2, false, false)
		case conflict:
			n++
			crlf := crNeeded(anc, o, t, r)
			write(o, i, r.i1, false, false)
			marker('<', l.Ours, crlf)
			write(o, r.i1, r.i1+r.chg1, crlf, true)
			marker('|', l.Ancestor, crlf)
			write(anc, r.i0, r.i0+r.chg0, crlf, true)
			marker('=', "", crlf)
			write(t, r.i2, r.i2+r.chg2, crlf, true)
			marker('>', l.Theirs, crlf)
		default:
			continue
		}
		i = r.i1 + r.chg1
	}
	write(o, i, len(o), false, false)
	return buf.Bytes(), n, nil
}

// crNeeded is git's is_cr_needed: markers end in CRLF when the lines
// before the conflict on both sides (or their first lines), and the
// ancestor's first line, end so, as far as each can tell.
func crNeeded(anc, o, t [][]byte, r region) bool {
	at := func(i int) int {
		if i > 0 {
			return i - 1
		}
		return 0
	}
	v := eolCRLF(o, at(r.i1))
	if v != 0 {
		v = eolCRLF(t, at(r.i2))
	}
	if v != 0 {
		v = eolCRLF(anc, 0)
	}
	return v == 1
}

// eolCRLF is git's is_eol_crlf: 1 when line i ends in CRLF, 0 when in LF
// alone, -1 when it cannot tell (no lines, or a lone line without one).
func eolCRLF(lines [][]byte, i int) int {
	crlf := func(l []byte) int {
		if len(l) > 1 && l[len(l)-2] == '\r' {
			return 1
		}
		return 0
	}
	switch {
	case len(lines) == 0:
		return -1
	case i < len(lines)-1:
		return crlf(lines[i])
	}
	if l := lines[i]; len(l) > 0 && l[len(l)-1] == '\n' {
		return crlf(l)
	}
	if i == 0 {
		return -1
	}
	return crlf(lines[i-1])
}
