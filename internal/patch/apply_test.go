package patch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func numbered(n int, tag string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d %s line\n", i, tag)
	}
	return b.String()
}

func randomBytes(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return string(b)
}

// The base and new tree of the main differential test: every kind of
// change a change set can hold, and names that need git's quoting.
func mixedTrees() (base, next tree) {
	long := numbered(60, "x")
	longEdited := strings.Replace(long, "5 x line\n", "5 x LINE\n", 1)
	longEdited = strings.Replace(longEdited, "9 x line\n", "", 1)                  // merges with the hunk above
	longEdited = strings.Replace(longEdited, "30 x line\n", "30 x line\nnew\n", 1) // its own hunk
	longEdited = strings.Replace(longEdited, "60 x line\n", "60 x end", 1)
	bigBin := randomBytes(1, 3000)
	lateNUL := strings.Repeat("text line\n", 900) + "\x00tail\n"

	base = tree{
		"text.txt":                  file("alpha\nbeta\ngamma\ndelta\n"),
		"long.txt":                  file(long),
		"nonl.txt":                  file("one\ntwo"),
		"addnl.txt":                 file("a\nb"),
		"rmnl.txt":                  file("a\nb\n"),
		"crlf.txt":                  file("one\r\ntwo\r\nthree\r\n"),
		"mixed-eol.txt":             file("a\r\nb\nc\r\n"),
		"markers.txt":               file("--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\ndiff --git a/x b/x\n"),
		"bin.dat":                   file("\x00\x01\x02binary\xff"),
		"big.bin":                   file(bigBin),
		"bin2text":                  file("bin\x00ary"),
		"text2bin":                  file("plain\n"),
		"late-nul.txt":              file(strings.Repeat("text line\n", 900) + "tail\n"),
		"to-empty":                  file("gone soon\n"),
		"from-empty":                file(""),
		"del-empty":                 file(""),
		"del.txt":                   file("deleted\ncontent\n"),
		"del.bin":                   file("\x00deleted"),
		"chmod-only":                file("same\n"),
		"chmod-edit":                file("before\n"),
		"unexec":                    exe("#!/bin/sh\n"),
		"link-del":                  link("somewhere"),
		"link-retarget":             link("old/target"),
		"link2file":                 link("target"),
		"file2link":                 file("was a file\n"),
		"f2d":                       file("a file that becomes a directory\n"),
		"d2f/a":                     file("a\n"),
		"d2f/sub/b":                 file("b\n"),
		"l2d":                       link("elsewhere"),
		"d2l/x":                     file("x\n"),
		"gone/x":                    file("x\n"),
		"gone/y/z":                  file("z\n"),
		"sp ace":                    file("x\n"),
		" lead":                     file("x\n"),
		"trail ":                    file("x\n"),
		"tab\tname":                 file("x\n"),
		"new\nline":                 file("x\n"),
		`quo"te`:                    file("x\n"),
		`back\slash`:                file("x\n"),
		"café":                      file("x\n"),
		"\xff\xfe raw":              file("x\n"),
		"dir with space/inner file": file("x\n"),
		"unchanged.txt":             file("same\n"),
	}
	next = tree{
		"text.txt":                  file("alpha\nBETA\ngamma\ndelta\nepsilon\n"),
		"long.txt":                  file(longEdited),
		"nonl.txt":                  file("one\nTWO"),
		"addnl.txt":                 file("a\nb\n"),
		"rmnl.txt":                  file("a\nb"),
		"crlf.txt":                  file("one\r\n2\r\nthree\r\nfour"),
		"mixed-eol.txt":             file("a\nb\r\nc\r\n"),
		"markers.txt":               file("--- a/x\n+++ b/y\n@@ -1 +1 @@\n\\ No newline at end of file\ndiff --git a/y b/y\n"),
		"bin.dat":                   file("\x00\x01\x02BINARY\xff\x00"),
		"big.bin":                   file(bigBin[:1000] + "changed" + bigBin[1100:]),
		"bin2text":                  file("binary no more\n"),
		"text2bin":                  file("now\x00binary"),
		"late-nul.txt":              file(lateNUL),
		"to-empty":                  file(""),
		"from-empty":                file("filled\n"),
		"new.txt":                   file("brand\nnew\n"),
		"new.bin":                   file("\x00\x01new"),
		"new-empty":                 file(""),
		"new-exec":                  exe("#!/bin/sh\necho hi\n"),
		"a/b/c/deep.txt":            file("deep\n"),
		"chmod-only":                exe("same\n"),
		"chmod-edit":                exe("after\n"),
		"unexec":                    file("#!/bin/sh\n"),
		"link-new":                  link("../outside/target"),
		"link-retarget":             link("new/target"),
		"link-dangling":             link("does-not-exist"),
		"link2file":                 file("now a file\n"),
		"file2link":                 link("text.txt"),
		"f2d/child":                 file("child\n"),
		"d2f":                       file("now a file\n"),
		"l2d/inside":                file("inside\n"),
		"d2l":                       link("text.txt"),
		"sp ace":                    file("y\n"),
		" lead":                     file("y\n"),
		"trail ":                    file("y\n"),
		"tab\tname":                 file("y\n"),
		"new\nline":                 file("y\n"),
		`quo"te`:                    file("y\n"),
		`back\slash`:                file("y\n"),
		"café":                      file("y\n"),
		"\xff\xfe raw":              file("y\n"),
		"dir with space/inner file": file("y\n"),
		"new dir/\xe9\n\t\"x\\":     file("weird\n"),
		"unchanged.txt":             file("same\n"),
	}
	return base, next
}

func TestGitApplyReproducesNewTree(t *testing.T) {
	requireGit(t)
	base, next := mixedTrees()
	patch := writePatch(t, changes(base, next))
	for _, repo := range []bool{false, true} {
		t.Run(fmt.Sprintf("repo=%v", repo), func(t *testing.T) {
			got, err := applyWithGit(t, base, patch, repo)
			if err != nil {
				t.Fatalf("%v\npatch:\n%s", err, patch)
			}
			if d := diffTrees(gitView(got), gitView(next)); d != "" {
				t.Errorf("git apply did not reproduce the new tree:\n%s\npatch:\n%s", d, patch)
			}
		})
	}
	t.Run("reverse", func(t *testing.T) {
		got, err := applyWithGit(t, next, patch, false, "-R")
		if err != nil {
			t.Fatalf("%v\npatch:\n%s", err, patch)
		}
		if d := diffTrees(gitView(got), gitView(base)); d != "" {
			t.Errorf("git apply -R did not reproduce the base tree:\n%s", d)
		}
	})
}
