package review

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/airlockdev/airlock/internal/patch"
)

// file is one path of a git-style patch, parsed for display.
type file struct {
	Path    string
	Status  string // "added", "deleted", "modified", "mode"
	OldMode string
	NewMode string
	Binary  bool
	Hunks   []hunk
	Added   int
	Deleted int
	// Protected says the path is under a protected selector.
	Protected bool
	// Truncated says lines were left out to keep the page readable.
	Truncated bool
}

// hunk is one @@ section.
type hunk struct {
	Header string
	Lines  []line
}

// line is one line of a hunk. Kind is ' ', '+', '-' or '\\' (the "no
// newline at end of file" marker); Old and New are line numbers, 0 where
// the line is not on that side.
type line struct {
	Kind     byte
	Old, New int
	Text     string
}

// maxLines bounds the lines shown for all files together.
const maxLines = 20000

// parsePatch reads the patch airlock diff writes: git's format, one
// "diff --git" header per path (never a rename), binary files as "GIT
// binary patch" literals.
func parsePatch(r io.Reader) ([]*file, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	var files []*file
	var f *file
	var h *hunk
	var oldN, newN, shown int
	inBinary := false
	for sc.Scan() {
		l := sc.Text()
		if rest, ok := strings.CutPrefix(l, "diff --git "); ok {
			p, err := headerPath(rest)
			if err != nil {
				return nil, err
			}
			f = &file{Path: p, Status: "modified"}
			files = append(files, f)
			h, inBinary = nil, false
			continue
		}
		if f == nil {
			continue
		}
		switch {
		case inBinary:
			continue
		case h == nil && strings.HasPrefix(l, "new file mode "):
			f.Status, f.NewMode = "added", strings.TrimPrefix(l, "new file mode ")
		case h == nil && strings.HasPrefix(l, "deleted file mode "):
			f.Status, f.OldMode = "deleted", strings.TrimPrefix(l, "deleted file mode ")
		case h == nil && strings.HasPrefix(l, "old mode "):
			f.Status, f.OldMode = "mode", strings.TrimPrefix(l, "old mode ")
		case h == nil && strings.HasPrefix(l, "new mode "):
			f.NewMode = strings.TrimPrefix(l, "new mode ")
		case h == nil && (strings.HasPrefix(l, "index ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ")):
		case l == "GIT binary patch" || strings.HasPrefix(l, "Binary files "):
			f.Binary, inBinary = true, true
		case strings.HasPrefix(l, "@@ "):
			o, n, err := hunkStart(l)
			if err != nil {
				return nil, err
			}
			oldN, newN = o, n
			f.Hunks = append(f.Hunks, hunk{Header: l})
			h = &f.Hunks[len(f.Hunks)-1]
		case h != nil && l != "":
			k := l[0]
			ln := line{Kind: k, Text: l[1:]}
			switch k {
			case ' ':
				ln.Old, ln.New = oldN, newN
				oldN++
				newN++
			case '-':
				ln.Old = oldN
				oldN++
				f.Deleted++
			case '+':
				ln.New = newN
				newN++
				f.Added++
			case '\\':
				ln.Text = strings.TrimSpace(l[1:])
			default:
				return nil, fmt.Errorf("patch line %q in %s: not a hunk line", l, f.Path)
			}
			if shown >= maxLines {
				f.Truncated = true
				continue
			}
			shown++
			h.Lines = append(h.Lines, ln)
		}
	}
	return files, sc.Err()
}

// headerPath is the path in a "diff --git a/P b/P" header's rest, either
// as is or C-quoted as git quotes names with unusual bytes.
func headerPath(rest string) (string, error) {
	if strings.HasPrefix(rest, `"`) {
		q, _, err := patch.Unquote(rest)
		if err != nil {
			return "", fmt.Errorf("patch header %q: %w", rest, err)
		}
		return strings.TrimPrefix(q, "a/"), nil
	}
	// Both sides name the same path: "a/" + P + " b/" + P.
	if len(rest) < 5 || (len(rest)-5)%2 != 0 {
		return "", fmt.Errorf("patch header %q: not two equal paths", rest)
	}
	return rest[2 : 2+(len(rest)-5)/2], nil
}

// hunkStart reads the first old and new line numbers of "@@ -a,b +c,d @@".
func hunkStart(l string) (int, int, error) {
	f := strings.Fields(l)
	if len(f) < 4 || f[3] != "@@" && !strings.HasPrefix(f[3], "@@") {
		return 0, 0, fmt.Errorf("hunk header %q", l)
	}
	num := func(s, sign string) (int, error) {
		s, ok := strings.CutPrefix(s, sign)
		if !ok {
			return 0, fmt.Errorf("hunk header %q", l)
		}
		s, _, _ = strings.Cut(s, ",")
		return strconv.Atoi(s)
	}
	o, err := num(f[1], "-")
	if err != nil {
		return 0, 0, err
	}
	n, err := num(f[2], "+")
	if err != nil {
		return 0, 0, err
	}
	// A side that starts at 0 is empty; its first line would be 1.
	return max(o, 1), max(n, 1), nil
}

// row is one row of the side-by-side view; a side with no line has
// Kind 0.
type row struct {
	Left, Right line
}

// sideBySide pairs a hunk's removed and added lines row by row, with
// context on both sides.
func sideBySide(h hunk) []row {
	var rows []row
	var dels, adds []line
	flush := func() {
		for i := 0; i < max(len(dels), len(adds)); i++ {
			var r row
			if i < len(dels) {
				r.Left = dels[i]
			}
			if i < len(adds) {
				r.Right = adds[i]
			}
			rows = append(rows, r)
		}
		dels, adds = nil, nil
	}
	for _, l := range h.Lines {
		switch l.Kind {
		case '-':
			if len(adds) > 0 {
				flush()
			}
			dels = append(dels, l)
		case '+':
			adds = append(adds, l)
		case '\\':
			flush()
			rows = append(rows, row{Left: l, Right: l})
		default:
			flush()
			rows = append(rows, row{Left: l, Right: l})
		}
	}
	flush()
	return rows
}
