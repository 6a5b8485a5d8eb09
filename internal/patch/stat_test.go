package patch

import (
	"bytes"
	"strings"
	"testing"
)

func statScenarios() map[string][2]tree {
	base, next := mixedTrees()
	delete(base, "late-nul.txt")
	delete(next, "late-nul.txt")
	longDir := "some/rather/deeply/nested/directory/structure/that/goes/on"
	return map[string][2]tree{
		"mixed": {base, next},
		"wide": {
			{
				"small.txt":                     file("a\nb\nc\n"),
				longDir + "/and/on/file.txt":    file(numbered(10, "n")),
				strings.Repeat("x", 70) + ".go": file("x\n"),
				"mostly-deleted.txt":            file(numbered(150, "d")),
			},
			{
				"small.txt":                     file("a\nB\nc\n"),
				longDir + "/and/on/file.txt":    file(numbered(12, "n")),
				strings.Repeat("x", 70) + ".go": file("y\n"),
				"grown.txt":                     file(numbered(230, "g")),
				"mostly-deleted.txt":            file(numbered(3, "d")),
			},
		},
		"one line":    {{"f": file("a\n")}, {"f": file("b\n")}},
		"mode only":   {{"f": file("a\n"), "g": file("\x00")}, {"f": exe("a\n"), "g": exe("\x00")}},
		"binary only": {{"b": file("\x00")}, {"b": file("\x00\x01"), "c": file("\x00" + strings.Repeat("z", 123456))}},
		"no change":   {{"f": file("a\n")}, {"f": file("a\n")}},
	}
}

// Stat and NameStatus print what git prints for the same change, computed
// by git at test time.
func TestStatAndNameStatusMatchGit(t *testing.T) {
	requireGit(t)
	for name, sc := range statScenarios() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base, next := sc[0], sc[1]
			files := changes(base, next)
			wants := gitRepoDiffs(t, base, next, []string{"--stat"}, []string{"--name-status"})
			for i, form := range []struct {
				flag string
				fn   func(*bytes.Buffer, []File) error
			}{
				{"--stat", func(b *bytes.Buffer, f []File) error { return Stat(b, f) }},
				{"--name-status", func(b *bytes.Buffer, f []File) error { return NameStatus(b, f) }},
			} {
				want := wants[i]
				var got bytes.Buffer
				if err := form.fn(&got, files); err != nil {
					t.Fatal(err)
				}
				if got.String() != want {
					t.Errorf("%s differs from git's\n%s", form.flag, lineDiff(want, got.String()))
				}
			}
		})
	}
}

// Pinned output, for machines without git and as a record of the format.
func TestStatGolden(t *testing.T) {
	base := tree{"a.txt": file("1\n2\n3\n"), "bin": file("\x00"), "tab\tname": file("x\n"), "old": file("o\n")}
	next := tree{"a.txt": file("1\nTWO\n3\nfour\n"), "bin": file("\x00\x01"), "tab\tname": link("x"), "new": exe("")}
	files := changes(base, next)
	var stat, ns bytes.Buffer
	if err := Stat(&stat, files); err != nil {
		t.Fatal(err)
	}
	if err := NameStatus(&ns, files); err != nil {
		t.Fatal(err)
	}
	wantStat := "" +
		" a.txt       |   3 ++-\n" +
		" bin         | Bin 1 -> 2 bytes\n" +
		" new         |   0\n" +
		" old         |   1 -\n" +
		" \"tab\\tname\" |   2 +-\n" +
		" 5 files changed, 3 insertions(+), 3 deletions(-)\n"
	wantNS := "M\ta.txt\nM\tbin\nA\tnew\nD\told\nT\t\"tab\\tname\"\n"
	if stat.String() != wantStat {
		t.Errorf("Stat:\n%s\nwant:\n%s", stat.String(), wantStat)
	}
	if ns.String() != wantNS {
		t.Errorf("NameStatus:\n%s\nwant:\n%s", ns.String(), wantNS)
	}
}
