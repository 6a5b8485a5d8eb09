package patch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/manifest"
)

// randomText builds lines from a small vocabulary, so that edits leave
// many equal lines for the diff to match, with mixed line endings and
// sometimes no final newline.
func randomText(r *rand.Rand, n int) []string {
	words := []string{"alpha", "beta", "gamma", "", "}", "\treturn nil", "x := 1", "  "}
	lines := make([]string, n)
	for i := range lines {
		end := "\n"
		if r.IntN(8) == 0 {
			end = "\r\n"
		}
		lines[i] = words[r.IntN(len(words))] + end
	}
	return lines
}

func joinText(r *rand.Rand, lines []string) string {
	s := strings.Join(lines, "")
	if len(lines) > 0 && r.IntN(4) == 0 {
		s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
	}
	return s
}

func randomEdit(r *rand.Rand, lines []string) []string {
	out := append([]string(nil), lines...)
	for range 1 + r.IntN(5) {
		i := r.IntN(len(out) + 1)
		switch r.IntN(3) {
		case 0: // insert
			out = append(out[:i], append(randomText(r, 1+r.IntN(3)), out[i:]...)...)
		case 1: // delete
			if i < len(out) {
				out = append(out[:i], out[min(len(out), i+1+r.IntN(3)):]...)
			}
		case 2: // replace
			if i < len(out) {
				out[i] = randomText(r, 1)[0]
			}
		}
	}
	return out
}

// randomTrees makes n files with random text and a random edit of each,
// some also flipping the executable bit.
func randomTrees(seed uint64, n int) (base, next tree) {
	r := rand.New(rand.NewPCG(seed, 2))
	base, next = tree{}, tree{}
	for i := range n {
		lines := randomText(r, r.IntN(25))
		p := fmt.Sprintf("f%03d.txt", i)
		base[p] = file(joinText(r, lines))
		next[p] = file(joinText(r, randomEdit(r, lines)))
		if r.IntN(10) == 0 {
			next[p] = exe(next[p].data)
		}
	}
	return base, next
}

func TestRandomEditsThroughGitApply(t *testing.T) {
	requireGit(t)
	base, next := randomTrees(1, 100)
	patch := writePatch(t, changes(base, next))
	got, err := applyWithGit(t, base, patch, false)
	if err != nil {
		t.Fatalf("%v\npatch:\n%s", err, patch)
	}
	if d := diffTrees(gitView(got), gitView(next)); d != "" {
		t.Errorf("git apply did not reproduce the edits:\n%s", d)
	}
}

func memTree(tr tree) map[string]mblob {
	m := map[string]mblob{}
	for p, n := range tr {
		switch n.kind {
		case manifest.KindFile:
			m[p] = mblob{gitMode(Side{Kind: n.kind, Mode: n.mode}), n.data}
		case manifest.KindSymlink:
			m[p] = mblob{modeSymlink, n.data}
		}
	}
	return m
}

func diffMem(got, want map[string]mblob) string {
	var b strings.Builder
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			fmt.Fprintf(&b, "%q: got %o %q (present %v), want %o %q\n", p, g.mode, g.data, ok, w.mode, w.data)
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			fmt.Fprintf(&b, "%q: unexpected %o %q\n", p, g.mode, g.data)
		}
	}
	return b.String()
}

// The in-Go reader that the fuzz target relies on agrees with git on the
// trees git is run on.
func TestStrictReaderReproducesTrees(t *testing.T) {
	mb, mn := mixedTrees()
	rb, rn := randomTrees(2, 100)
	for name, sc := range map[string][2]tree{"mixed": {mb, mn}, "random": {rb, rn}} {
		t.Run(name, func(t *testing.T) {
			patch := writePatch(t, changes(sc[0], sc[1]))
			got := memTree(sc[0])
			if err := applyPatch(got, string(patch)); err != nil {
				t.Fatalf("%v\npatch:\n%s", err, patch)
			}
			if d := diffMem(got, memTree(sc[1])); d != "" {
				t.Error(d)
			}
		})
	}
}
