package patch

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// lcsLen is the textbook O(NM) longest common subsequence length.
func lcsLen(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checkScript fails unless the unmarked lines of a and b are equal in
// order, and returns how many lines are kept.
func checkScript(t *testing.T, a, b []string, delA, insB []bool) int {
	t.Helper()
	var keptA, keptB []string
	for i, d := range delA {
		if !d {
			keptA = append(keptA, a[i])
		}
	}
	for j, d := range insB {
		if !d {
			keptB = append(keptB, b[j])
		}
	}
	if !slices.Equal(keptA, keptB) {
		t.Fatalf("kept lines differ:\na=%q\nb=%q\nkeptA=%q\nkeptB=%q", a, b, keptA, keptB)
	}
	return len(keptA)
}

func randomSeq(r *rand.Rand, n, alphabet int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = string(rune('a' + r.IntN(alphabet)))
	}
	return s
}

func TestDiffLinesIsMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for range 2000 {
		a := randomSeq(r, r.IntN(30), 1+r.IntN(6))
		b := randomSeq(r, r.IntN(30), 1+r.IntN(6))
		if r.IntN(2) == 0 {
			b = randomEdit(r, a)
		}
		delA, insB := diffLines(a, b)
		if kept, want := checkScript(t, a, b, delA, insB), lcsLen(a, b); kept != want {
			t.Fatalf("kept %d lines, the longest common subsequence has %d\na=%q\nb=%q", kept, want, a, b)
		}
	}
}

// With the search cut short at every step, the script is still valid,
// only longer.
func TestDiffLinesCutShortStaysValid(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for range 2000 {
		a := ints(randomSeq(r, r.IntN(60), 1+r.IntN(4)))
		b := ints(randomSeq(r, r.IntN(60), 1+r.IntN(4)))
		m := newMyers(a, b)
		m.maxCost = 1 + r.IntN(3)
		m.compare(0, len(a), 0, len(b))
		checkScript(t, strs(a), strs(b), m.delA, m.insB)
	}
}

func ints(s []string) []int {
	out := make([]int, len(s))
	for i, v := range s {
		out[i] = int(v[0])
	}
	return out
}

func strs(s []int) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(rune(v))
	}
	return out
}

// Large unlike inputs finish quickly: lines found on one side only never
// enter the search.
func TestDiffLinesLargeInputs(t *testing.T) {
	var a, b []string
	for i := range 50000 {
		a = append(a, "a"+strings.Repeat("x", i%7)+strconv.Itoa(i))
		b = append(b, "b"+strconv.Itoa(i))
	}
	delA, insB := diffLines(a, b)
	if kept := checkScript(t, a, b, delA, insB); kept != 0 {
		t.Fatalf("kept %d lines of two files with no line in common", kept)
	}
	// Many small edits spread over a long file.
	c := slices.Clone(a)
	for i := 0; i < len(c); i += 97 {
		c[i] = "edited"
	}
	delA, insB = diffLines(a, c)
	if kept := checkScript(t, a, c, delA, insB); kept != len(a)-len(a)/97-1 {
		t.Fatalf("kept %d lines, want %d", kept, len(a)-len(a)/97-1)
	}
}

func TestSplitLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a\n"}},
		{"a\r\nb", []string{"a\r\n", "b"}},
		{"\n\n", []string{"\n", "\n"}},
		{"a\rb\n", []string{"a\rb\n"}},
	} {
		if got := splitLines([]byte(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("splitLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestHunkRange(t *testing.T) {
	for _, tc := range []struct {
		start, count int
		want         string
	}{
		{0, 0, "0,0"}, {4, 0, "4,0"}, {0, 1, "1"}, {9, 1, "10"}, {0, 3, "1,3"}, {9, 7, "10,7"},
	} {
		if got := hunkRange(tc.start, tc.count); got != tc.want {
			t.Errorf("hunkRange(%d, %d) = %q, want %q", tc.start, tc.count, got, tc.want)
		}
	}
}
