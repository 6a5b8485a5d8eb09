package patch

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/manifest"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, name, prefixed string }{
		{"plain.txt", "plain.txt", "a/plain.txt"},
		{"sp ace", "sp ace", "a/sp ace"},
		{"tab\tx", `"tab\tx"`, `"a/tab\tx"`},
		{"nl\nx", `"nl\nx"`, `"a/nl\nx"`},
		{`q"x`, `"q\"x"`, `"a/q\"x"`},
		{`b\x`, `"b\\x"`, `"a/b\\x"`},
		{"café", `"caf\303\251"`, `"a/caf\303\251"`},
		{"\xff", `"\377"`, `"a/\377"`},
		{"\x01\x7f\a\b\v\f\r", `"\001\177\a\b\v\f\r"`, `"a/\001\177\a\b\v\f\r"`},
	} {
		if got := quoteName(tc.in); got != tc.name {
			t.Errorf("quoteName(%q) = %s, want %s", tc.in, got, tc.name)
		}
		if got := quotePrefixed("a/", tc.in); got != tc.prefixed {
			t.Errorf("quotePrefixed(%q) = %s, want %s", tc.in, got, tc.prefixed)
		}
		if back, err := unquote(quoteName(tc.in)); err != nil || back != tc.in {
			t.Errorf("unquote(quoteName(%q)) = %q, %v", tc.in, back, err)
		}
	}
}

// Pinned bytes of the main shapes, so that a change of format shows even
// where git is absent.
func TestWriteGolden(t *testing.T) {
	base := tree{"t": file("a\nb\nc\n"), "m": file("x\n"), "e": file(""), "l": link("old")}
	next := tree{"t": file("a\nB\nc"), "m": exe("x\n"), "n": file(""), "l": file("now\n"), "b": file("\x00")}
	// Binary data lines are left out: their bytes are whatever
	// compress/zlib makes; TestBase85Lines pins the encoding.
	got := binaryData.ReplaceAllString(string(writePatch(t, changes(base, next))), "$1")
	want := `diff --git a/b b/b
new file mode 100644
index 0000000000000000000000000000000000000000..f76dd238ade08917e6712764a16a22005a50573d
GIT binary patch
literal 1

literal 0

diff --git a/e b/e
deleted file mode 100644
index e69de29bb2d1d6434b8b29ae775ad8c2e48c5391..0000000000000000000000000000000000000000
diff --git a/l b/l
deleted file mode 120000
index 489ce0f857e7634a0eb9f328265a3e91fad49f61..0000000000000000000000000000000000000000
--- a/l
+++ /dev/null
@@ -1 +0,0 @@
-old
\ No newline at end of file
diff --git a/l b/l
new file mode 100644
index 0000000000000000000000000000000000000000..b6ed15e81e2593d7bb6265eb4a991d29dc3e628b
--- /dev/null
+++ b/l
@@ -0,0 +1 @@
+now
diff --git a/m b/m
old mode 100644
new mode 100755
diff --git a/n b/n
new file mode 100644
index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391
diff --git a/t b/t
index de980441c3ab03a8c07dda1ad27b8a11f39deb1e..36ef1ba5a79cdfa8b05036e0aa1aab5b21eb0639 100644
--- a/t
+++ b/t
@@ -1,3 +1,3 @@
 a
-b
-c
+B
+c
\ No newline at end of file
`
	if got != want {
		t.Errorf("patch differs from the pinned one\n%s", lineDiff(want, got))
	}
}

// Git's own encoding of its empty literal (the zlib stream it deflates from
// no input), a partial last group, and the framing of a long stream.
func TestBase85Lines(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte{0x78, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}, "HcmV?d00001\n"},
		{[]byte{0, 0, 0, 1}, "D00001\n"}, {[]byte{1}, "A0RR91\n"},
		{[]byte{0xff, 0xff, 0xff, 0xff}, "D|NsC0\n"},
		{bytes.Repeat([]byte{0}, 53), "z" + strings.Repeat("0", 65) + "\nA00000\n"},
	} {
		var buf bytes.Buffer
		writeBase85Lines(&errWriter{w: &buf}, tc.in)
		if buf.String() != tc.want {
			t.Errorf("% x: got %q, want %q", tc.in, buf.String(), tc.want)
		}
	}
}

func TestDirectoriesProduceNoOutput(t *testing.T) {
	files := []File{
		{Path: "empty-new", New: Side{Kind: manifest.KindDir, Mode: 0o755}},
		{Path: "empty-gone", Old: Side{Kind: manifest.KindDir, Mode: 0o755}},
		{Path: "chmod-dir", Old: Side{Kind: manifest.KindDir, Mode: 0o755}, New: Side{Kind: manifest.KindDir, Mode: 0o700}},
	}
	for name, fn := range map[string]func(io.Writer, []File) error{"Write": Write, "Stat": Stat, "NameStatus": NameStatus} {
		var buf bytes.Buffer
		if err := fn(&buf, files); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if buf.Len() != 0 {
			t.Errorf("%s printed %q for directories alone", name, buf.String())
		}
	}
}

func TestPermissionOnlyChangeProducesNoOutput(t *testing.T) {
	files := changes(tree{"f": file("x\n")}, tree{"f": withMode(file("x\n"), 0o600)})
	if len(files) != 1 {
		t.Fatalf("test setup: %d changes", len(files))
	}
	var buf bytes.Buffer
	if err := Write(&buf, files); err != nil || buf.Len() != 0 {
		t.Errorf("Write = %q, %v; want nothing: git keeps only the executable bit", buf.String(), err)
	}
}

func TestGaps(t *testing.T) {
	files := changes(
		tree{"gone-empty": dir(), "gone-full": dir(), "gone-full/f": file("x"), "chmod": withMode(dir(), 0o755), "perm": file("x"),
			"group": file("x"), "exec": file("x"), "same": file("s")},
		tree{"new-empty": dir(), "new-full": dir(), "new-full/f": file("x"), "chmod": withMode(dir(), 0o700), "perm": withMode(file("x"), 0o600),
			"group": withMode(file("x"), 0o664), "exec": exe("y"), "umask002": withMode(file("x"), 0o664),
			"suid": withMode(file("x"), 0o755|fs.ModeSetuid), "same": file("s")},
	)
	got := Gaps(files)
	var paths []string
	for _, g := range got {
		paths = append(paths, g.Path+": "+g.Reason)
	}
	want := []string{
		"chmod: directory mode 0755 -> 0700 is not representable in a patch",
		"gone-empty: removing an empty directory is not representable in a patch",
		"group: mode 0644 -> 0664: a patch carries only the executable bit",
		"new-empty: an empty directory is not representable in a patch",
		"perm: mode 0600: git apply creates files with 0666 or 0777 less its umask",
		"suid: mode 4755: git apply creates files with 0666 or 0777 less its umask",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("Gaps:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
}

func TestContentErrorsNameThePath(t *testing.T) {
	boom := errors.New("boom")
	files := []File{{
		Path: "dir/f",
		Old:  Side{Kind: manifest.KindFile, Mode: 0o644, Open: func() (io.ReadCloser, error) { return nil, boom }},
		New:  Side{Kind: manifest.KindFile, Mode: 0o644, Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil }},
	}}
	for name, fn := range map[string]func(io.Writer, []File) error{"Write": Write, "Stat": Stat, "NameStatus": NameStatus} {
		err := fn(io.Discard, files)
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "dir/f") {
			t.Errorf("%s: error %v, want one wrapping the cause and naming dir/f", name, err)
		}
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestWriteErrorsAreReturned(t *testing.T) {
	files := changes(tree{"a": file("1\n")}, tree{"a": file("2\n"), "b": file("\x00")})
	for n := range 6 {
		if err := Write(&failWriter{after: n}, files); err == nil {
			t.Errorf("Write with the writer failing after %d writes returned nil", n)
		}
	}
}
