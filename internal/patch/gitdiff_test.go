package patch

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitRepoDiffs commits base in a fresh repository, turns its work tree into
// next, stages everything and returns `git diff --cached <args>` for the
// staged change, once per argument list.
func gitRepoDiffs(t *testing.T, base, next tree, argLists ...[]string) []string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "repo")
	writeTree(t, root, base)
	for _, a := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "--allow-empty", "-m", "base"}} {
		if _, err := git(t, root, nil, a...); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeTree(t, root, next)
	if _, err := git(t, root, nil, "add", "-A"); err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, args := range argLists {
		out, err := git(t, root, nil, append([]string{"-c", "core.quotePath=true", "diff", "--cached", "--no-renames"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
	}
	return outs
}

var (
	hunkTrailer = regexp.MustCompile(`(?m)^(@@ -\S+ \+\S+ @@).*$`)
	binaryData  = regexp.MustCompile(`(?m)^((?:literal|delta) \d+\n)(?:[A-Za-z]\S*\n)+`)
)

// comparable strips what may rightly differ between two writers of the
// same patch: git's function-name trailer on hunk headers, and the
// binary hunks (git may send a delta where Write sends a literal, and zlib
// implementations deflate differently).
func comparable(patch string) string {
	patch = hunkTrailer.ReplaceAllString(patch, "$1")
	return binaryData.ReplaceAllString(patch, "<binary hunk>\n")
}

// The patch is what git itself prints for the same change, header for
// header and line for line, where the edit is unambiguous.
func TestWriteMatchesGitDiff(t *testing.T) {
	requireGit(t)
	base, next := mixedTrees()
	// Git calls a file with its first NUL after 8000 bytes text; Write
	// sends it as binary so that no NUL lands in a text hunk.
	delete(base, "late-nul.txt")
	delete(next, "late-nul.txt")
	want := gitRepoDiffs(t, base, next, []string{"--binary", "--full-index"})[0]
	got := string(writePatch(t, changes(base, next)))
	if comparable(got) != comparable(want) {
		t.Errorf("patch differs from git's\n%s", lineDiff(comparable(want), comparable(got)))
	}
}

// lineDiff shows the first lines where two texts part.
func lineDiff(want, got string) string {
	w, g := strings.SplitAfter(want, "\n"), strings.SplitAfter(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			lo := max(0, i-5)
			return "context:\n" + strings.Join(w[lo:i], "") + "want: " + strq(w, i, 6) + "got:  " + strq(g, i, 6)
		}
	}
	return ""
}

func strq(lines []string, i, n int) string {
	if i >= len(lines) {
		return "<end>\n"
	}
	return strings.Join(lines[i:min(len(lines), i+n)], "      ")
}
