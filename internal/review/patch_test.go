package review

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

const samplePatch = `diff --git a/src/app.go b/src/app.go
index 1111111..2222222 100644
--- a/src/app.go
+++ b/src/app.go
@@ -1,3 +1,4 @@
 package app
-func A() {}
+func A() { println() }
+func B() {}
 // end
diff --git "a/caf\303\251 \"x\".txt" "b/caf\303\251 \"x\".txt"
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ "b/caf\303\251 \"x\".txt"
@@ -0,0 +1 @@
+bonjour
\ No newline at end of file
diff --git a/with space b/with space
deleted file mode 100755
index 4444444..0000000
--- a/with space	
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/bin.dat b/bin.dat
index 5555555..6666666 100644
GIT binary patch
literal 3
KcmZQzWMT#Y01f~L

literal 2
JcmZQzVE_OE00IC2

diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
diff --git a/empty b/empty
new file mode 100644
index 0000000..e69de29
`

func TestParsePatch(t *testing.T) {
	files, err := parsePatch(strings.NewReader(samplePatch))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Status+" "+f.Path)
	}
	want := []string{"modified src/app.go", `added café "x".txt`, "deleted with space", "modified bin.dat", "mode run.sh", "added empty"}
	if !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	app := files[0]
	if app.Added != 2 || app.Deleted != 1 || len(app.Hunks) != 1 {
		t.Fatalf("src/app.go: +%d -%d, %d hunks", app.Added, app.Deleted, len(app.Hunks))
	}
	var lines []string
	for _, l := range app.Hunks[0].Lines {
		lines = append(lines, string(l.Kind)+l.Text+" "+strconv.Itoa(l.Old)+"/"+strconv.Itoa(l.New))
	}
	wantLines := []string{" package app 1/1", "-func A() {} 2/0", "+func A() { println() } 0/2", "+func B() {} 0/3", " // end 3/4"}
	if !slices.Equal(lines, wantLines) {
		t.Errorf("lines %q, want %q", lines, wantLines)
	}
	if l := files[1].Hunks[0].Lines; len(l) != 2 || l[0].New != 1 || l[1].Kind != '\\' {
		t.Errorf("added file lines %+v", l)
	}
	if !files[3].Binary || len(files[3].Hunks) != 0 {
		t.Errorf("binary file %+v", files[3])
	}
	if files[4].OldMode != "100644" || files[4].NewMode != "100755" {
		t.Errorf("mode change %+v", files[4])
	}

	rows := sideBySide(app.Hunks[0])
	var sbs []string
	for _, r := range rows {
		sbs = append(sbs, mark(r.Left.Kind)+r.Left.Text+" | "+mark(r.Right.Kind)+r.Right.Text)
	}
	wantSBS := []string{" package app |  package app", "-func A() {} | +func A() { println() }", ". | +func B() {}", " // end |  // end"}
	if !slices.Equal(sbs, wantSBS) {
		t.Errorf("side by side %q, want %q", sbs, wantSBS)
	}
}

// mark shows a side-by-side cell's kind, "." for an empty cell.
func mark(k byte) string {
	if k == 0 {
		return "."
	}
	return string(k)
}

func TestParsePatchRejects(t *testing.T) {
	for _, p := range []string{
		"diff --git a/x b/xy\n",
		"diff --git \"a/x\n",
		"diff --git a/x b/x\n@@ -1 +1 @@\n?what\n",
		"diff --git a/x b/x\n@@ nonsense\n",
	} {
		if _, err := parsePatch(strings.NewReader(p)); err == nil {
			t.Errorf("parsePatch(%q) accepted it", p)
		}
	}
}

// FuzzParsePatch: any input parses or fails without panicking, and line
// numbers only grow within a hunk.
func FuzzParsePatch(f *testing.F) {
	f.Add(samplePatch)
	f.Add("diff --git a/a b/a\n@@ -0,0 +1,2 @@\n+x\n+y\n")
	f.Fuzz(func(t *testing.T, p string) {
		files, err := parsePatch(strings.NewReader(p))
		if err != nil {
			return
		}
		for _, f := range files {
			for _, h := range f.Hunks {
				lastOld, lastNew := 0, 0
				for _, l := range h.Lines {
					if l.Old != 0 && l.Old <= lastOld || l.New != 0 && l.New <= lastNew {
						t.Fatalf("line numbers go back in %s: %+v", f.Path, h.Lines)
					}
					lastOld, lastNew = max(lastOld, l.Old), max(lastNew, l.New)
				}
				sideBySide(h)
			}
		}
	})
}
