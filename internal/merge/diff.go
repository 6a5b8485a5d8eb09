package merge

import (
	"bytes"
	"errors"
)

// errInvariant reports a broken internal invariant of the line diff. It
// should never happen; Text returns it rather than panicking so that a bug
// here fails one commit closed instead of crashing the process.
var errInvariant = errors.New("line diff lost track of its change groups (a bug in airlock)")

// Tuning constants. Their values are git's, and they must stay so: they
// decide where the diff gives up on optimality, and so which lines it
// aligns, and so whether two edits touch.
const (
	maxCostMin    = 256  // lower bound of the cost at which the search stops looking for the optimum
	heurMinCost   = 256  // cost above which a long diagonal may end the search early
	snakeCnt      = 20   // length of a diagonal that counts as long
	kHeur         = 4    // how far ahead of the cost a sampled diagonal must be
	maxEqLimit    = 1024 // cap on how often a line may repeat before it counts as noise
	kpDisRun      = 4    // ratio that decides whether a repeated line inside unmatched ones is dropped
	simScanWindow = 100  // how far that decision looks either way
)

// hunk is one change of a two-way diff: lines [i1, i1+chg1) of the old
// version became lines [i2, i2+chg2) of the new one.
type hunk struct {
	i1, i2     int
	chg1, chg2 int
}

// splitLines cuts b into lines, each keeping its '\n'. A last line without
// one is kept as it is, so "x" and "x\n" are different lines, as in git.
func splitLines(b []byte) [][]byte {
	recs := make([][]byte, 0, bytes.Count(b, []byte{'\n'})+1)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			recs = append(recs, b)
			break
		}
		recs = append(recs, b[:i+1])
		b = b[i+1:]
	}
	return recs
}

// side is one of the two versions a line diff compares.
type side struct {
	class []int // equivalence class of each line: equal lines share one
	// changed has a false sentinel before the first line and after the last,
	// so that walks over runs of changed lines need no bounds checks; line i
	// is at changed[i+1].
	changed []bool
	// The lines the search considers, after the ends both versions share
	// and the lines that cannot or should not be matched are left out.
	ref  []int // index of each considered line in class
	hash []int // its class
}

func newSide(n int) *side {
	return &side{class: make([]int, n), changed: make([]bool, n+2)}
}

func (s *side) n() int               { return len(s.class) }
func (s *side) isChanged(i int) bool { return s.changed[i+1] }
func (s *side) mark(i int, c bool)   { s.changed[i+1] = c }

// diffLines computes the line diff from a to b the way git's xdiff does with
// its default settings (Myers, not minimal, no indent heuristic): the same
// pre-filter, the same cost cut-offs and the same sliding of change groups.
// Matching git's alignment, not merely producing a correct diff, is what
// makes a merge here clean exactly when git's is.
//
// budget bounds the work of the search, which the cut-offs keep near
// O(N^1.5) but which is still minutes on megabytes of lines drawn from a
// handful of values; what the search spends is taken from it, and
// ErrTooCostly reports it spent.
func diffLines(a, b [][]byte, budget *int) ([]hunk, error) {
	x, y := newSide(len(a)), newSide(len(b))
	countA, countB := classify(a, b, x, y)
	prefilter(x, y, countA, countB)
	if err := search(x, y, budget); err != nil {
		return nil, err
	}
	if err := compact(x, y); err != nil {
		return nil, err
	}
	if err := compact(y, x); err != nil {
		return nil, err
	}
	return script(x, y), nil
}

// classify numbers the distinct lines of both versions and counts how often
// each occurs in each.
func classify(a, b [][]byte, x, y *side) (countA, countB []int) {
	ids := make(map[string]int, len(a)+len(b))
	id := func(line []byte) int {
		if c, ok := ids[string(line)]; ok {
			return c
		}
		c := len(ids)
		ids[string(line)] = c
		countA = append(countA, 0)
		countB = append(countB, 0)
		return c
	}
	for i, l := range a {
		c := id(l)
		x.class[i] = c
		countA[c]++
	}
	for i, l := range b {
		c := id(l)
		y.class[i] = c
		countB[c]++
	}
	return countA, countB
}

// bogosqrt is the power of two git uses as a cheap square root.
func bogosqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// prefilter leaves out of the search the ends both versions share, every
// line the other version lacks (it must be changed), and a line repeated so
// often in the other version that it would only steer the search into
// spurious matches when it sits among unmatched lines.
func prefilter(x, y *side, countA, countB []int) {
	na, nb := x.n(), y.n()
	lim := min(na, nb)
	start := 0
	for start < lim && x.class[start] == y.class[start] {
		start++
	}
	lim -= start
	tail := 0
	for tail < lim && x.class[na-1-tail] == y.class[nb-1-tail] {
		tail++
	}
	// The ranges are inclusive, as the window arithmetic below expects.
	keep(x, start, na-tail-1, countB)
	keep(y, start, nb-tail-1, countA)
}

// keep decides, for lines [start, end] of s, which take part in the search;
// the others are marked changed now. other counts each class's lines in the
// other version.
func keep(s *side, start, end int, other []int) {
	const (
		unmatched = 0
		matched   = 1
		frequent  = 2
	)
	mlim := min(bogosqrt(s.n()), maxEqLimit)
	dis := make([]byte, s.n()+1)
	for i := start; i <= end; i++ {
		switch nm := other[s.class[i]]; {
		case nm == 0:
			dis[i] = unmatched
		case nm >= mlim:
			dis[i] = frequent
		default:
			dis[i] = matched
		}
	}
	for i := start; i <= end; i++ {
		if dis[i] == matched || dis[i] == frequent && !dropFrequent(dis, i, start, end) {
			s.ref = append(s.ref, i)
			s.hash = append(s.hash, s.class[i])
		} else {
			s.mark(i, true)
		}
	}
}

// dropFrequent reports whether the frequent line i lies in a stretch made
// mostly of unmatched lines, with some on each side of it.
func dropFrequent(dis []byte, i, s, e int) bool {
	if i-s > simScanWindow {
		s = i - simScanWindow
	}
	if e-i > simScanWindow {
		e = i + simScanWindow
	}
	var before, after int         // unmatched lines met
	freqBefore, freqAfter := 1, 1 // frequent lines met, counting i
	for r := 1; i-r >= s; r++ {
		if dis[i-r] == 0 {
			before++
		} else if dis[i-r] == 2 {
			freqBefore++
		} else {
			break
		}
	}
	if before == 0 {
		return false
	}
	for r := 1; i+r <= e; r++ {
		if dis[i+r] == 0 {
			after++
		} else if dis[i+r] == 2 {
			freqAfter++
		} else {
			break
		}
	}
	if after == 0 {
		return false
	}
	unmatched := before + after
	freq := freqBefore + freqAfter
	return freq*kpDisRun < freq+unmatched
}

// myers holds the state of the search over the considered lines.
type myers struct {
	x, y   *side
	kf, kb []int // furthest reach on each diagonal, forward and backward
	off    int   // index of diagonal 0 in kf and kb
	mxcost int
	steps  int // work done so far: diagonals visited plus lines matched
	budget int // steps allowed
}

func (m *myers) over() bool { return m.steps > m.budget }

// search marks the changed lines among the considered ones with Myers'
// bidirectional O(ND) search, cut short the way git cuts it. It gives up
// with ErrTooCostly once it has spent *budget steps, and takes what it
// spent from *budget.
func search(x, y *side, budget *int) error {
	n1, n2 := len(x.hash), len(y.hash)
	ndiags := n1 + n2 + 3
	m := &myers{
		x: x, y: y,
		kf:     make([]int, ndiags),
		kb:     make([]int, ndiags),
		off:    n2 + 1,
		mxcost: max(bogosqrt(ndiags), maxCostMin),
		budget: *budget,
	}
	m.compare(0, n1, 0, n2, false)
	*budget -= m.steps
	if m.over() {
		return ErrTooCostly
	}
	return nil
}

type split struct {
	i1, i2       int
	minLo, minHi bool
}

// compare finds the changes between considered lines [off1, lim1) of x and
// [off2, lim2) of y, dividing the box at a middle snake until one side of
// it is empty.
func (m *myers) compare(off1, lim1, off2, lim2 int, needMin bool) {
	h1, h2 := m.x.hash, m.y.hash
	for off1 < lim1 && off2 < lim2 && h1[off1] == h2[off2] {
		off1++
		off2++
	}
	for off1 < lim1 && off2 < lim2 && h1[lim1-1] == h2[lim2-1] {
		lim1--
		lim2--
	}
	switch {
	case off1 == lim1:
		for ; off2 < lim2; off2++ {
			m.y.mark(m.y.ref[off2], true)
		}
	case off2 == lim2:
		for ; off1 < lim1; off1++ {
			m.x.mark(m.x.ref[off1], true)
		}
	default:
		spl := m.split(off1, lim1, off2, lim2, needMin)
		if m.over() {
			return
		}
		m.compare(off1, spl.i1, off2, spl.i2, spl.minLo)
		m.compare(spl.i1, lim1, spl.i2, lim2, spl.minHi)
	}
}

// split finds where to divide the box: where the forward and backward
// searches meet, or, once the cost grows past git's limits, a point that
// looks good enough. minLo and minHi say whether the halves must still be
// searched for an optimal path.
func (m *myers) split(off1, lim1, off2, lim2 int, needMin bool) split {
	b := m.newBands(off1, lim1, off2, lim2)
	for ec := 1; ; ec++ {
		fsnake, spl, met := b.forward()
		if met {
			return spl
		}
		bsnake, spl, met := b.backward()
		if met {
			return spl
		}
		if m.over() {
			return split{}
		}
		if needMin {
			continue
		}
		// Past a cost, accept a diagonal that has come far from its
		// corner, ends in a long run of matches, and stays near the middle.
		if (fsnake || bsnake) && ec > heurMinCost {
			if spl, ok := b.forwardSnake(ec); ok {
				return spl
			}
			if spl, ok := b.backwardSnake(ec); ok {
				return spl
			}
		}
		// Too expensive: take whichever search has reached furthest.
		if ec >= m.mxcost {
			return b.furthest()
		}
	}
}

// lineMax stands for "beyond every line" in the backward band.
const lineMax = int(^uint(0) >> 1)

// bands is one split's search: the box, and the forward and backward
// bands of diagonals reached so far (in m.kf and m.kb, where diagonal d is
// at index m.off+d).
type bands struct {
	m                      *myers
	off1, lim1, off2, lim2 int
	dmin, dmax             int // the diagonals of the box
	fmid, bmid             int // the diagonals of its corners
	odd                    bool
	fmin, fmax, bmin, bmax int // the bands
}

func (m *myers) newBands(off1, lim1, off2, lim2 int) *bands {
	b := &bands{m: m, off1: off1, lim1: lim1, off2: off2, lim2: lim2,
		dmin: off1 - lim2, dmax: lim1 - off2, fmid: off1 - off2, bmid: lim1 - lim2}
	b.odd = (b.fmid-b.bmid)&1 != 0
	b.fmin, b.fmax = b.fmid, b.fmid
	b.bmin, b.bmax = b.bmid, b.bmid
	m.kf[m.off+b.fmid] = off1
	m.kb[m.off+b.bmid] = lim1
	return b
}

// forward advances the forward band by one edit: it widens the band by
// one diagonal each way, or narrows it where it already touches the box,
// keeping its parity, and follows each diagonal's run of matches. It
// reports whether a run was long (a snake), and the split where it met
// the backward band, if it did.
func (b *bands) forward() (snake bool, spl split, met bool) {
	h1, h2, o, kf, kb := b.m.x.hash, b.m.y.hash, b.m.off, b.m.kf, b.m.kb
	if b.fmin > b.dmin {
		b.fmin--
		kf[o+b.fmin-1] = -1
	} else {
		b.fmin++
	}
	if b.fmax < b.dmax {
		b.fmax++
		kf[o+b.fmax+1] = -1
	} else {
		b.fmax--
	}
	for d := b.fmax; d >= b.fmin; d -= 2 {
		var i1 int
		if kf[o+d-1] >= kf[o+d+1] {
			i1 = kf[o+d-1] + 1
		} else {
			i1 = kf[o+d+1]
		}
		prev := i1
		i2 := i1 - d
		for i1 < b.lim1 && i2 < b.lim2 && h1[i1] == h2[i2] {
			i1++
			i2++
		}
		b.m.steps += 1 + i1 - prev
		if i1-prev > snakeCnt {
			snake = true
		}
		kf[o+d] = i1
		if b.odd && b.bmin <= d && d <= b.bmax && kb[o+d] <= i1 {
			return snake, split{i1, i2, true, true}, true
		}
	}
	return snake, split{}, false
}

// backward is forward for the backward band.
func (b *bands) backward() (snake bool, spl split, met bool) {
	h1, h2, o, kf, kb := b.m.x.hash, b.m.y.hash, b.m.off, b.m.kf, b.m.kb
	if b.bmin > b.dmin {
		b.bmin--
		kb[o+b.bmin-1] = lineMax
	} else {
		b.bmin++
	}
	if b.bmax < b.dmax {
		b.bmax++
		kb[o+b.bmax+1] = lineMax
	} else {
		b.bmax--
	}
	for d := b.bmax; d >= b.bmin; d -= 2 {
		var i1 int
		if kb[o+d-1] < kb[o+d+1] {
			i1 = kb[o+d-1]
		} else {
			i1 = kb[o+d+1] - 1
		}
		prev := i1
		i2 := i1 - d
		for i1 > b.off1 && i2 > b.off2 && h1[i1-1] == h2[i2-1] {
			i1--
			i2--
		}
		b.m.steps += 1 + prev - i1
		if prev-i1 > snakeCnt {
			snake = true
		}
		kb[o+d] = i1
		if !b.odd && b.fmin <= d && d <= b.fmax && i1 <= kf[o+d] {
			return snake, split{i1, i2, true, true}, true
		}
	}
	return snake, split{}, false
}

// forwardSnake is git's heuristic over the forward band, at cost ec: the
// best diagonal that has come far from its corner and ends in snakeCnt
// matches, if one qualifies.
func (b *bands) forwardSnake(ec int) (split, bool) {
	h1, h2, o, kf := b.m.x.hash, b.m.y.hash, b.m.off, b.m.kf
	best := 0
	var spl split
	for d := b.fmax; d >= b.fmin; d -= 2 {
		dd := abs(d - b.fmid)
		i1 := kf[o+d]
		i2 := i1 - d
		v := (i1 - b.off1) + (i2 - b.off2) - dd
		if v > kHeur*ec && v > best &&
			b.off1+snakeCnt <= i1 && i1 < b.lim1 &&
			b.off2+snakeCnt <= i2 && i2 < b.lim2 {
			for k := 1; h1[i1-k] == h2[i2-k]; k++ {
				if k == snakeCnt {
					best = v
					spl.i1, spl.i2 = i1, i2
					break
				}
			}
		}
	}
	spl.minLo, spl.minHi = true, false
	return spl, best > 0
}

// backwardSnake is forwardSnake for the backward band.
func (b *bands) backwardSnake(ec int) (split, bool) {
	h1, h2, o, kb := b.m.x.hash, b.m.y.hash, b.m.off, b.m.kb
	best := 0
	var spl split
	for d := b.bmax; d >= b.bmin; d -= 2 {
		dd := abs(d - b.bmid)
		i1 := kb[o+d]
		i2 := i1 - d
		v := (b.lim1 - i1) + (b.lim2 - i2) - dd
		if v > kHeur*ec && v > best &&
			b.off1 < i1 && i1 <= b.lim1-snakeCnt &&
			b.off2 < i2 && i2 <= b.lim2-snakeCnt {
			for k := 0; h1[i1+k] == h2[i2+k]; k++ {
				if k == snakeCnt-1 {
					best = v
					spl.i1, spl.i2 = i1, i2
					break
				}
			}
		}
	}
	spl.minLo, spl.minHi = false, true
	return spl, best > 0
}

// furthest is the split where whichever band has reached furthest into
// the box ends: git's way out of a search that costs too much.
func (b *bands) furthest() split {
	o, kf, kb := b.m.off, b.m.kf, b.m.kb
	fbest, fbest1 := -1, -1
	for d := b.fmax; d >= b.fmin; d -= 2 {
		i1 := min(kf[o+d], b.lim1)
		i2 := i1 - d
		if b.lim2 < i2 {
			i1, i2 = b.lim2+d, b.lim2
		}
		if fbest < i1+i2 {
			fbest, fbest1 = i1+i2, i1
		}
	}
	bbest, bbest1 := lineMax, lineMax
	for d := b.bmax; d >= b.bmin; d -= 2 {
		i1 := max(b.off1, kb[o+d])
		i2 := i1 - d
		if i2 < b.off2 {
			i1, i2 = b.off2+d, b.off2
		}
		if i1+i2 < bbest {
			bbest, bbest1 = i1+i2, i1
		}
	}
	if (b.lim1+b.lim2)-bbest < fbest-(b.off1+b.off2) {
		return split{fbest1, fbest - fbest1, true, false}
	}
	return split{bbest1, bbest - bbest1, false, true}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// group is a run of changed lines [start, end) of one side; an empty one
// (start == end) sits just above line start.
type group struct{ start, end int }

func (s *side) firstGroup() group {
	var g group
	for s.isChanged(g.end) {
		g.end++
	}
	return g
}

func (s *side) nextGroup(g *group) bool {
	if g.end == s.n() {
		return false
	}
	g.start = g.end + 1
	g.end = g.start
	for s.isChanged(g.end) {
		g.end++
	}
	return true
}

func (s *side) prevGroup(g *group) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	g.start = g.end
	for s.isChanged(g.start - 1) {
		g.start--
	}
	return true
}

// slideDown moves g one line toward the end when the line after it equals
// its first line, absorbing any group it then touches.
func (s *side) slideDown(g *group) bool {
	if g.end < s.n() && s.class[g.start] == s.class[g.end] {
		s.mark(g.start, false)
		g.start++
		s.mark(g.end, true)
		g.end++
		for s.isChanged(g.end) {
			g.end++
		}
		return true
	}
	return false
}

// slideUp moves g one line toward the start when the line before it equals
// its last line, absorbing any group it then touches.
func (s *side) slideUp(g *group) bool {
	if g.start > 0 && s.class[g.start-1] == s.class[g.end-1] {
		g.start--
		s.mark(g.start, true)
		g.end--
		s.mark(g.end, false)
		for s.isChanged(g.start - 1) {
			g.start--
		}
		return true
	}
	return false
}

// compact slides each group of changed lines in x as far as it can, merging
// groups that meet, and then settles it at the lowest position that lines
// up with a change in o; a group that can line up with none stays as low as
// it can go. git does the same with its default settings.
func compact(x, o *side) error {
	g, og := x.firstGroup(), o.firstGroup()
	for {
		if g.end != g.start {
			var size, earliestEnd int
			endMatchingOther := -1
			for {
				size = g.end - g.start
				endMatchingOther = -1
				for x.slideUp(&g) {
					if !o.prevGroup(&og) {
						return errInvariant
					}
				}
				earliestEnd = g.end
				if og.end > og.start {
					endMatchingOther = g.end
				}
				for x.slideDown(&g) {
					if !o.nextGroup(&og) {
						return errInvariant
					}
					if og.end > og.start {
						endMatchingOther = g.end
					}
				}
				if size == g.end-g.start {
					break
				}
			}
			if g.end != earliestEnd && endMatchingOther != -1 {
				for og.end == og.start {
					if !x.slideUp(&g) || !o.prevGroup(&og) {
						return errInvariant
					}
				}
			}
		}
		if !x.nextGroup(&g) {
			break
		}
		if !o.nextGroup(&og) {
			return errInvariant
		}
	}
	if o.nextGroup(&og) {
		return errInvariant
	}
	return nil
}

// script turns the marks into hunks, in order.
func script(x, y *side) []hunk {
	var rev []hunk
	changed := func(s *side, i int) bool { return i >= -1 && s.isChanged(i) }
	for i1, i2 := x.n(), y.n(); i1 >= 0 || i2 >= 0; i1, i2 = i1-1, i2-1 {
		if changed(x, i1-1) || changed(y, i2-1) {
			l1, l2 := i1, i2
			for changed(x, i1-1) {
				i1--
			}
			for changed(y, i2-1) {
				i2--
			}
			rev = append(rev, hunk{i1: i1, i2: i2, chg1: l1 - i1, chg2: l2 - i2})
		}
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}
