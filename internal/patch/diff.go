package patch

// splitLines cuts content after every '\n'; the last line lacks one when the
// content does not end with a newline. Lines keep their bytes, CR included.
func splitLines(b []byte) []string {
	var lines []string
	start := 0
	for i, c := range b {
		if c == '\n' {
			lines = append(lines, string(b[start:i+1]))
			start = i + 1
		}
	}
	if start < len(b) {
		lines = append(lines, string(b[start:]))
	}
	return lines
}

// diffLines marks which lines of a are deleted and which lines of b are
// inserted; the unmarked lines of both, in order, are equal. The script is
// minimal unless the inputs are so unlike that the search is cut short, as
// git's xdiff cuts it.
func diffLines(a, b []string) (delA, insB []bool) {
	delA, insB = make([]bool, len(a)), make([]bool, len(b))
	ids := make(map[string]int, len(a)+len(b))
	intern := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	ia, ib := intern(a), intern(b)

	// A line that occurs on one side only can never be matched, so it is
	// changed whatever the script; leaving it out before the search keeps
	// the script minimal and makes unlike files cheap.
	inA := make([]bool, len(ids))
	inB := make([]bool, len(ids))
	for _, id := range ia {
		inA[id] = true
	}
	for _, id := range ib {
		inB[id] = true
	}
	var ra, rb, mapA, mapB []int
	for i, id := range ia {
		if inB[id] {
			ra = append(ra, id)
			mapA = append(mapA, i)
		} else {
			delA[i] = true
		}
	}
	for j, id := range ib {
		if inA[id] {
			rb = append(rb, id)
			mapB = append(mapB, j)
		} else {
			insB[j] = true
		}
	}

	m := newMyers(ra, rb)
	m.compare(0, len(ra), 0, len(rb))
	for i, d := range m.delA {
		if d {
			delA[mapA[i]] = true
		}
	}
	for j, d := range m.insB {
		if d {
			insB[mapB[j]] = true
		}
	}
	return delA, insB
}

// myers is Myers' O((N+M)D) difference algorithm in its linear-space form,
// as GNU diff implements it: search from both ends until the paths meet,
// split there, recurse on both halves.
type myers struct {
	a, b       []int
	delA, insB []bool
	fd, bd     []int // furthest x per diagonal (x-y), forward and backward
	off        int   // index of diagonal 0 in fd and bd
	maxCost    int   // edit steps after which a good split is taken instead of the best
}

func newMyers(a, b []int) *myers {
	n := len(a) + len(b) + 3
	return &myers{
		a: a, b: b,
		delA: make([]bool, len(a)), insB: make([]bool, len(b)),
		fd: make([]int, n), bd: make([]int, n), off: len(b) + 1,
		maxCost: max(256, isqrt(len(a)+len(b))),
	}
}

func isqrt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}

func (m *myers) compare(xoff, xlim, yoff, ylim int) {
	for xoff < xlim && yoff < ylim && m.a[xoff] == m.b[yoff] {
		xoff++
		yoff++
	}
	for xoff < xlim && yoff < ylim && m.a[xlim-1] == m.b[ylim-1] {
		xlim--
		ylim--
	}
	switch {
	case xoff == xlim:
		for j := yoff; j < ylim; j++ {
			m.insB[j] = true
		}
		return
	case yoff == ylim:
		for i := xoff; i < xlim; i++ {
			m.delA[i] = true
		}
		return
	}
	x, y := m.split(xoff, xlim, yoff, ylim)
	if (x == xoff && y == yoff) || (x == xlim && y == ylim) {
		// No progress to be had from this split: give up on matching
		// lines here rather than recurse forever.
		for i := xoff; i < xlim; i++ {
			m.delA[i] = true
		}
		for j := yoff; j < ylim; j++ {
			m.insB[j] = true
		}
		return
	}
	m.compare(xoff, x, yoff, y)
	m.compare(x, xlim, y, ylim)
}

// split returns a point on an optimal path through the box, or, once the
// search has cost maxCost steps, the point furthest along either search.
// Values on diagonals that leave the box are kept: a snake never extends
// there, and the meeting test stays exact.
func (m *myers) split(xoff, xlim, yoff, ylim int) (int, int) {
	fd, bd, o := m.fd, m.bd, m.off
	dmin, dmax := xoff-ylim, xlim-yoff
	fmid, bmid := xoff-yoff, xlim-ylim
	fmin, fmax, bmin, bmax := fmid, fmid, bmid, bmid
	odd := (fmid-bmid)&1 != 0
	const far = int(^uint(0) >> 1)
	fd[o+fmid] = xoff
	bd[o+bmid] = xlim
	for c := 1; ; c++ {
		if fmin > dmin {
			fmin--
			fd[o+fmin-1] = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			fd[o+fmax+1] = -1
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			tlo, thi := fd[o+d-1], fd[o+d+1]
			x := tlo + 1
			if tlo < thi {
				x = thi
			}
			y := x - d
			for x < xlim && y < ylim && m.a[x] == m.b[y] {
				x++
				y++
			}
			fd[o+d] = x
			if odd && bmin <= d && d <= bmax && bd[o+d] <= x {
				return x, y
			}
		}

		if bmin > dmin {
			bmin--
			bd[o+bmin-1] = far
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			bd[o+bmax+1] = far
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			tlo, thi := bd[o+d-1], bd[o+d+1]
			x := thi - 1
			if tlo < thi {
				x = tlo
			}
			y := x - d
			for xoff < x && yoff < y && m.a[x-1] == m.b[y-1] {
				x--
				y--
			}
			bd[o+d] = x
			if !odd && fmin <= d && d <= fmax && x <= fd[o+d] {
				return x, y
			}
		}

		if c < m.maxCost {
			continue
		}
		fxy, fx := -1, 0
		for d := fmax; d >= fmin; d -= 2 {
			x := min(fd[o+d], xlim)
			y := x - d
			if y > ylim {
				x, y = ylim+d, ylim
			}
			if x+y > fxy {
				fxy, fx = x+y, x
			}
		}
		bxy, bx := far, 0
		for d := bmax; d >= bmin; d -= 2 {
			x := max(bd[o+d], xoff)
			y := x - d
			if y < yoff {
				x, y = yoff+d, yoff
			}
			if x+y < bxy {
				bxy, bx = x+y, x
			}
		}
		if (xlim+ylim)-bxy < fxy-(xoff+yoff) {
			return fx, fxy - fx
		}
		return bx, bxy - bx
	}
}
