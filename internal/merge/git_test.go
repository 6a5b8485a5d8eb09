package merge

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// oracle runs `git merge-file -p` as the reference for Text.
type oracle struct {
	dir string
	env []string
}

// newOracle skips the test when git is not installed: the comparison with
// git is the point of these tests, and nothing else can stand in for it.
func newOracle(t testing.TB) *oracle {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testbin.Missing(t, "git is not installed: the comparison with git merge-file needs it")
	}
	dir := t.TempDir()
	// Keep every configuration out: merge.conflictStyle=diff3, for one,
	// lowers git's merge level and so changes which merges are clean.
	env := append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir),
		"HOME="+dir,
	)
	return &oracle{dir: dir, env: env}
}

// merge returns git's merged output and whether git merged cleanly.
func (o *oracle) merge(t testing.TB, ancestor, ours, theirs []byte) ([]byte, bool) {
	t.Helper()
	for name, b := range map[string][]byte{"base": ancestor, "ours": ours, "theirs": theirs} {
		if err := os.WriteFile(filepath.Join(o.dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("git", "merge-file", "-p", "ours", "base", "theirs")
	cmd.Dir, cmd.Env = o.dir, o.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.Bytes(), true
	case errors.As(err, &exit) && exit.ExitCode() > 0 && exit.ExitCode() < 128:
		return nil, false // the exit code counts the conflicts
	}
	t.Fatalf("git merge-file failed: %v: %s", err, stderr.Bytes())
	return nil, false
}

// genVersions makes an ancestor and two edited versions of it. Lines come
// from a small alphabet so that repeats, and so ambiguous alignments, are
// common; new lines are sometimes fresh and sometimes taken from the
// alphabet. Endings vary per version: LF, CRLF, a mix, and no final newline.
func genVersions(r *rand.Rand) (ancestor, ours, theirs []byte) {
	alphabet := []string{"a", "b", "c", "d", "e", "{", "}", ""}
	line := func() string {
		if r.IntN(3) == 0 {
			return fmt.Sprintf("n%d", r.IntN(1000))
		}
		return alphabet[r.IntN(len(alphabet))]
	}
	anc := make([]string, r.IntN(41))
	for i := range anc {
		anc[i] = alphabet[r.IntN(len(alphabet))]
	}
	edit := func(lines []string) []string {
		out := append([]string(nil), lines...)
		for range r.IntN(4) {
			pos := r.IntN(len(out) + 1)
			n := 1 + r.IntN(3)
			switch r.IntN(3) {
			case 0: // insert
				ins := make([]string, n)
				for i := range ins {
					ins[i] = line()
				}
				out = append(out[:pos], append(ins, out[pos:]...)...)
			case 1: // delete
				end := min(pos+n, len(out))
				out = append(out[:pos], out[end:]...)
			case 2: // replace
				for i := pos; i < min(pos+n, len(out)); i++ {
					out[i] = line()
				}
			}
		}
		return out
	}
	o := edit(anc)
	var th []string
	switch r.IntN(8) {
	case 0: // the same change on both sides
		th = append([]string(nil), o...)
	case 1: // the same change plus more
		th = edit(o)
	default:
		th = edit(anc)
	}
	crlf := r.IntN(4) == 0
	join := func(lines []string) []byte {
		var b strings.Builder
		mixed := r.IntN(6) == 0
		for _, l := range lines {
			b.WriteString(l)
			if crlf != (mixed && r.IntN(2) == 0) {
				b.WriteString("\r\n")
			} else {
				b.WriteString("\n")
			}
		}
		s := b.String()
		if r.IntN(5) == 0 {
			s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
		}
		return []byte(s)
	}
	a := join(anc)
	// Mostly keep an unedited side byte-identical to the ancestor, so that
	// the endings above do not turn every case into a whole-file change.
	ob, tb := join(o), join(th)
	if r.IntN(2) == 0 && strings.Join(o, "\n") == strings.Join(anc, "\n") {
		ob = a
	}
	if r.IntN(2) == 0 && strings.Join(th, "\n") == strings.Join(anc, "\n") {
		tb = a
	}
	return a, ob, tb
}

// maxSpuriousRate is the share of generated cases in which Text may report
// a conflict that git merges. Text reproduces git's diff, so the installed
// git should yield none; the margin is for a git release that aligns some
// input differently. Merging where git conflicts is never tolerated.
const maxSpuriousRate = 0.01

func TestTextMatchesGit(t *testing.T) {
	o := newOracle(t)
	const cases = 600
	r := rand.New(rand.NewPCG(1, 2))
	var bothClean, bothConflict, spurious int
	for i := range cases {
		anc, ours, theirs := genVersions(r)
		got, ok, err := Text(anc, ours, theirs)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want, gitOK := o.merge(t, anc, ours, theirs)
		switch {
		case ok && !gitOK:
			t.Errorf("case %d: merged where git conflicts\nancestor %q\nours     %q\ntheirs   %q\ngot      %q", i, anc, ours, theirs, got)
		case !ok && gitOK:
			spurious++
			t.Logf("case %d: conflict where git merges\nancestor %q\nours     %q\ntheirs   %q\ngit      %q", i, anc, ours, theirs, want)
		case ok && !bytes.Equal(got, want):
			t.Errorf("case %d: merge differs from git's\nancestor %q\nours     %q\ntheirs   %q\ngot      %q\ngit      %q", i, anc, ours, theirs, got, want)
		case ok:
			bothClean++
		default:
			bothConflict++
		}
	}
	t.Logf("%d cases: %d merged alike, %d conflicts alike, %d conflicts where git merged (%.2f%%)",
		cases, bothClean, bothConflict, spurious, 100*float64(spurious)/cases)
	if float64(spurious) > maxSpuriousRate*cases {
		t.Errorf("%d of %d cases conflict where git merges, over the %.0f%% allowed", spurious, cases, 100*maxSpuriousRate)
	}
	// A generator that rarely produced both outcomes would prove little.
	if bothClean < cases/5 || bothConflict < cases/5 {
		t.Errorf("generator is lopsided: %d clean and %d conflicting of %d", bothClean, bothConflict, cases)
	}
}

// FuzzText compares Text with git merge-file on arbitrary inputs. Run it
// with `go test -fuzz FuzzText ./internal/merge`; plain `go test` replays the
// seeds in testdata/fuzz/FuzzText.
func FuzzText(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("A\nb\nc\n"), []byte("a\nb\nC\n"))
	f.Fuzz(func(t *testing.T, anc, ours, theirs []byte) {
		const limit = 4 << 10 // keeps each git run, and the diff, quick
		if len(anc) > limit || len(ours) > limit || len(theirs) > limit {
			return
		}
		got, ok, err := Text(anc, ours, theirs)
		if !IsText(anc) || !IsText(ours) || !IsText(theirs) {
			if !errors.Is(err, ErrNotText) {
				t.Fatalf("binary input: err = %v, want ErrNotText", err)
			}
			return // git refuses binary input too
		}
		if err != nil {
			t.Fatal(err)
		}
		o := newOracle(t)
		want, gitOK := o.merge(t, anc, ours, theirs)
		switch {
		case ok && !gitOK:
			t.Fatalf("merged where git conflicts: got %q", got)
		case ok && !bytes.Equal(got, want):
			t.Fatalf("merge differs from git's:\ngot %q\ngit %q", got, want)
		case !ok && gitOK:
			// Tolerated in the differential test, up to a rate; but the
			// fuzzer is there to find where the alignment drifts from git's.
			t.Fatalf("conflict where git merges: git %q", want)
		}
	})
}

var hunkHeader = regexp.MustCompile(`(?m)^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// diff returns the hunks of git's own line diff from a to b, configured as
// git merge-file configures it: Myers, not minimal, no indent heuristic.
// With no context lines each of git's changes is one hunk.
func (o *oracle) diff(t testing.TB, a, b []byte) []hunk {
	t.Helper()
	for name, data := range map[string][]byte{"a": a, "b": b} {
		if err := os.WriteFile(filepath.Join(o.dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("git", "diff", "--no-index", "--no-ext-diff", "--no-color",
		"--diff-algorithm=myers", "--no-indent-heuristic", "-U0", "a", "b")
	cmd.Dir, cmd.Env = o.dir, o.env
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("git diff failed: %v", err)
	}
	var hs []hunk
	num := func(s string) int {
		if s == "" {
			return 1 // git leaves out a count of one
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, m := range hunkHeader.FindAllStringSubmatch(string(out), -1) {
		h := hunk{i1: num(m[1]), chg1: num(m[2]), i2: num(m[3]), chg2: num(m[4])}
		// A header names the first line of a non-empty range, one-based,
		// and the line before an empty one.
		if h.chg1 > 0 {
			h.i1--
		}
		if h.chg2 > 0 {
			h.i2--
		}
		hs = append(hs, h)
	}
	return hs
}

// TestDiffMatchesGit pins the line diff beneath the merge to git's,
// including the cut-offs that only large inputs reach: the cost limit
// (inputs of a few thousand lines that share little) and the long-diagonal
// heuristic (inputs of over 32768 lines each).
func TestDiffMatchesGit(t *testing.T) {
	o := newOracle(t)
	r := rand.New(rand.NewPCG(3, 4))
	randomLines := func(n, values int) []string {
		lines := make([]string, n)
		for i := range lines {
			lines[i] = fmt.Sprintf("v%d", r.IntN(values))
		}
		return lines
	}
	// mutate copies lines, changing about one line in every gap.
	mutate := func(lines []string, gap, values int) []string {
		var out []string
		for _, l := range lines {
			switch r.IntN(gap) {
			case 0:
				out = append(out, fmt.Sprintf("v%d", r.IntN(values)))
			case 1:
				out = append(out, l, fmt.Sprintf("v%d", r.IntN(values)))
			case 2:
			default:
				out = append(out, l)
			}
		}
		return out
	}
	join := func(lines []string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

	type pair struct {
		name string
		a, b []byte
	}
	var pairs []pair
	for i := range 150 {
		a, b, _ := genVersions(r)
		pairs = append(pairs, pair{fmt.Sprintf("small %d", i), a, b})
	}
	for i := range 3 {
		n := 2000 + r.IntN(3000)
		pairs = append(pairs, pair{fmt.Sprintf("cost limit %d", i), join(randomLines(n, 4)), join(randomLines(n+r.IntN(300), 4))})
	}
	for i := range 2 {
		a := randomLines(34000+r.IntN(4000), 2000)
		pairs = append(pairs, pair{fmt.Sprintf("long diagonals %d", i), join(a), join(mutate(a, 20, 2000))})
	}
	for _, p := range pairs {
		got, err := diffLines(splitLines(p.a), splitLines(p.b), new(maxSteps))
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if want := o.diff(t, p.a, p.b); !slices.Equal(got, want) {
			t.Errorf("%s: %d hunks, git has %d; first difference at %v", p.name, len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(got, want []hunk) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("hunk %d: %+v, git %+v", i, got[i], want[i])
		}
	}
	return "the end of the shorter list"
}
