package patch

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/airlockdev/airlock/internal/manifest"
)

// Side is one side of a changed path: what the base held, or what the
// change set makes of it.
type Side struct {
	Kind   manifest.Kind
	Mode   fs.FileMode // permission bits; of a file, git keeps only owner-executable
	Target string      // a symlink's target, raw bytes
	// Open returns a regular file's content. Write, Stat and NameStatus
	// call it at most once per side, one file at a time, and read the
	// content whole.
	Open func() (io.ReadCloser, error)
}

// File is one changed path (slash-separated, relative to the base) with
// its old and new side. Kind none stands for an absent side.
type File struct {
	Path     string
	Old, New Side
}

// Git modes, as the patch prints them.
const (
	modeFile     = 0o100644
	modeExec     = 0o100755
	modeSymlink  = 0o120000
	modeTypeMask = 0o170000
)

// blob is one side as git sees it: a mode (0 when absent) and content.
type blob struct {
	mode uint32
	data []byte
}

// pair is one path that git would report, with both sides loaded.
type pair struct {
	path     string
	old, new blob
}

// status is the letter `git diff --name-status` prints for the pair.
func (p pair) status() byte {
	switch {
	case p.old.mode == 0:
		return 'A'
	case p.new.mode == 0:
		return 'D'
	case p.old.mode&modeTypeMask != p.new.mode&modeTypeMask:
		return 'T'
	}
	return 'M'
}

func gitMode(s Side) uint32 {
	switch s.Kind {
	case manifest.KindFile:
		if s.Mode&0o100 != 0 {
			return modeExec
		}
		return modeFile
	case manifest.KindSymlink:
		return modeSymlink
	}
	// Directories are implied by the paths beneath them; other kinds are
	// never applied.
	return 0
}

func load(path string, s Side) (blob, error) {
	mode := gitMode(s)
	switch mode {
	case 0:
		return blob{}, nil
	case modeSymlink:
		return blob{mode: mode, data: []byte(s.Target)}, nil
	}
	if s.Open == nil {
		return blob{}, fmt.Errorf("read %s for the patch: no content source", path)
	}
	rc, err := s.Open()
	if err != nil {
		return blob{}, fmt.Errorf("read %s for the patch: %w", path, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return blob{}, fmt.Errorf("read %s for the patch: %w", path, err)
	}
	return blob{mode: mode, data: data}, nil
}

// pairs yields, in path order, every file git would report, loading one
// file's content at a time.
func pairs(files []File, yield func(pair) error) error {
	sorted := slices.Clone(files)
	slices.SortStableFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range sorted {
		if gitMode(f.Old) == 0 && gitMode(f.New) == 0 {
			continue
		}
		old, err := load(f.Path, f.Old)
		if err != nil {
			return err
		}
		nw, err := load(f.Path, f.New)
		if err != nil {
			return err
		}
		if old.mode == nw.mode && bytes.Equal(old.data, nw.data) {
			continue
		}
		if err := yield(pair{f.Path, old, nw}); err != nil {
			return err
		}
	}
	return nil
}

// isBinary reports whether content must travel as a binary hunk. Git calls
// content binary when a NUL is among its first 8000 bytes; a NUL further on
// would put a NUL into a text hunk, so any NUL counts here.
func isBinary(data []byte) bool { return bytes.IndexByte(data, 0) >= 0 }

// blobID is the git (sha1) object id of a blob with this content.
func blobID(data []byte) string {
	if data == nil {
		return strings.Repeat("0", 40)
	}
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// Write writes the patch for files: what `git diff --binary --full-index
// --no-renames` prints for the same change. Directories and other
// unrepresentable changes (see Gaps) produce no output.
func Write(w io.Writer, files []File) error {
	bw := &errWriter{w: w}
	err := pairs(files, func(p pair) error {
		if p.status() == 'T' {
			// Git cannot patch a path from one type to another in
			// place: it deletes the old and creates the new.
			writePair(bw, pair{p.path, p.old, blob{}})
			writePair(bw, pair{p.path, blob{}, p.new})
		} else {
			writePair(bw, p)
		}
		return bw.err
	})
	if err != nil {
		return err
	}
	return bw.err
}

func writePair(w *errWriter, p pair) {
	a, b := quotePrefixed("a/", p.path), quotePrefixed("b/", p.path)
	w.printf("diff --git %s %s\n", a, b)
	switch {
	case p.old.mode == 0:
		w.printf("new file mode %06o\n", p.new.mode)
	case p.new.mode == 0:
		w.printf("deleted file mode %06o\n", p.old.mode)
	case p.old.mode != p.new.mode:
		w.printf("old mode %06o\nnew mode %06o\n", p.old.mode, p.new.mode)
	}
	var oldData, newData []byte
	if p.old.mode != 0 {
		oldData = nonNil(p.old.data)
	}
	if p.new.mode != 0 {
		newData = nonNil(p.new.data)
	}
	if p.old.mode != 0 && p.new.mode != 0 && bytes.Equal(oldData, newData) {
		return // a mode change alone
	}
	w.printf("index %s..%s", blobID(oldData), blobID(newData))
	if p.old.mode == p.new.mode {
		w.printf(" %06o", p.old.mode)
	}
	w.printf("\n")
	if isBinary(oldData) || isBinary(newData) {
		w.printf("GIT binary patch\n")
		writeLiteral(w, newData)
		writeLiteral(w, oldData)
		return
	}
	if len(oldData) == 0 && len(newData) == 0 {
		return // an empty file added or deleted: the header says it all
	}
	if p.old.mode == 0 {
		a = "/dev/null"
	}
	if p.new.mode == 0 {
		b = "/dev/null"
	}
	// Git ends a name holding a space with a tab, so that a reader that
	// stops at whitespace-then-date keeps the whole name.
	w.printf("--- %s%s\n+++ %s%s\n", a, tabIfSpace(a), b, tabIfSpace(b))
	writeHunks(w, splitLines(oldData), splitLines(newData))
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func tabIfSpace(name string) string {
	if strings.Contains(name, " ") {
		return "\t"
	}
	return ""
}

const context = 3

// group is one run of changed lines: a[i0:i1] replaced by b[j0:j1].
type group struct{ i0, i1, j0, j1 int }

func groups(delA, insB []bool) []group {
	var gs []group
	i, j := 0, 0
	for i < len(delA) || j < len(insB) {
		if i < len(delA) && j < len(insB) && !delA[i] && !insB[j] {
			i++
			j++
			continue
		}
		g := group{i0: i, j0: j}
		for i < len(delA) && delA[i] {
			i++
		}
		for j < len(insB) && insB[j] {
			j++
		}
		g.i1, g.j1 = i, j
		if g.i0 == g.i1 && g.j0 == g.j1 {
			// The marks disagree on how many lines are equal: a bug
			// in diffLines, which must not become a wrong patch.
			panic("patch: inconsistent line diff")
		}
		gs = append(gs, g)
	}
	return gs
}

func writeHunks(w *errWriter, a, b []string) {
	delA, insB := diffLines(a, b)
	gs := groups(delA, insB)
	for start := 0; start < len(gs); {
		end := start
		for end+1 < len(gs) && gs[end+1].i0-gs[end].i1 <= 2*context {
			end++
		}
		first, last := gs[start], gs[end]
		a0 := max(0, first.i0-context)
		b0 := first.j0 - (first.i0 - a0)
		a1 := min(len(a), last.i1+context)
		b1 := last.j1 + (a1 - last.i1)
		w.printf("@@ -%s +%s @@\n", hunkRange(a0, a1-a0), hunkRange(b0, b1-b0))
		i := a0
		for _, g := range gs[start : end+1] {
			writeLines(w, ' ', a[i:g.i0])
			writeLines(w, '-', a[g.i0:g.i1])
			writeLines(w, '+', b[g.j0:g.j1])
			i = g.i1
		}
		writeLines(w, ' ', a[i:a1])
		start = end + 1
	}
}

// hunkRange prints a hunk's line range as unified diff does: 1-based start
// and count, the count left out when it is 1, and an empty range named by
// the line before it.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(count)
}

func writeLines(w *errWriter, prefix byte, lines []string) {
	for _, l := range lines {
		w.printf("%c%s", prefix, l)
		if !strings.HasSuffix(l, "\n") {
			w.printf("\n\\ No newline at end of file\n")
		}
	}
}

// errWriter keeps the first write error so that formatting code need not
// check each call.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func (e *errWriter) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}
