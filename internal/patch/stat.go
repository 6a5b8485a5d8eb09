package patch

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// NameStatus writes one line per path git would report, as `git diff
// --name-status --no-renames` does: a status letter (A added, D deleted, M
// content or executable bit changed, T changed between file and symlink),
// a tab, and the path quoted as git quotes it.
func NameStatus(w io.Writer, files []File) error {
	ew := &errWriter{w: w}
	err := pairs(files, func(p pair) error {
		ew.printf("%c\t%s\n", p.status(), quoteName(p.path))
		return ew.err
	})
	if err != nil {
		return err
	}
	return ew.err
}

// statLine is one path's entry in the --stat table.
type statLine struct {
	name           string
	added, deleted int // lines, or for a binary file the new and old size
	binary         bool
}

// statWidth is the table width git uses when stdout is not a terminal.
const statWidth = 80

// Stat writes the table `git diff --stat --no-renames` prints for files
// (80 columns): one line per path with its count of changed lines and a
// +/- graph scaled to fit, or "Bin OLD -> NEW bytes" for binary content,
// then the summary line. A path that changes between file and symlink is
// one line, its old and new content compared as git compares them. Nothing
// is written when there is nothing to report.
func Stat(w io.Writer, files []File) error {
	var lines []statLine
	err := pairs(files, func(p pair) error {
		l := statLine{name: quoteName(p.path)}
		if isBinary(p.old.data) || isBinary(p.new.data) {
			l.binary = true
			if string(p.old.data) != string(p.new.data) {
				l.added, l.deleted = len(p.new.data), len(p.old.data)
			}
		} else if string(p.old.data) != string(p.new.data) {
			delA, insB := diffLines(splitLines(p.old.data), splitLines(p.new.data))
			l.deleted, l.added = countTrue(delA), countTrue(insB)
		}
		lines = append(lines, l)
		return nil
	})
	if err != nil {
		return err
	}
	if len(lines) == 0 {
		return nil
	}
	ew := &errWriter{w: w}
	writeStat(ew, lines)
	return ew.err
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// writeStat lays the table out as git's show_stats does, so that the two
// print the same bytes.
func writeStat(w *errWriter, lines []statLine) {
	maxLen, maxChange, numberWidth, binWidth := 0, 0, 0, 0
	for _, l := range lines {
		maxLen = max(maxLen, len(l.name))
		if l.binary {
			// "Bin XXX -> YYY bytes"
			binWidth = max(binWidth, 14+decimalWidth(l.added)+decimalWidth(l.deleted))
			numberWidth = 3 // counts align with "Bin"
			continue
		}
		maxChange = max(maxChange, l.added+l.deleted)
	}
	width := statWidth
	numberWidth = max(numberWidth, decimalWidth(maxChange))
	if width < 16+6+numberWidth {
		width = 16 + 6 + numberWidth
	}
	graphWidth := maxChange
	if maxChange+4 <= binWidth {
		graphWidth = binWidth - 4
	}
	nameWidth := maxLen
	if nameWidth+numberWidth+6+graphWidth > width {
		if graphWidth > width*3/8-numberWidth-6 {
			graphWidth = max(6, width*3/8-numberWidth-6)
		}
		if nameWidth > width-numberWidth-6-graphWidth {
			nameWidth = width - numberWidth - 6 - graphWidth
		} else {
			graphWidth = width - numberWidth - 6 - nameWidth
		}
	}

	adds, dels := 0, 0
	for _, l := range lines {
		name, prefix, room := l.name, "", nameWidth
		if len(name) > nameWidth {
			// Keep the tail, from a slash if there is one, behind "...".
			prefix = "..."
			room = max(0, nameWidth-3)
			name = name[len(name)-room:]
			if i := strings.IndexByte(name, '/'); i >= 0 {
				name = name[i:]
			}
		}
		pad := strings.Repeat(" ", max(0, room-len(name)))
		if l.binary {
			w.printf(" %s%s%s | %*s", prefix, name, pad, numberWidth, "Bin")
			if l.added == 0 && l.deleted == 0 {
				w.printf("\n")
			} else {
				w.printf(" %d -> %d bytes\n", l.deleted, l.added)
			}
			continue
		}
		adds += l.added
		dels += l.deleted
		add, del := l.added, l.deleted
		if graphWidth <= maxChange {
			total := scaleLinear(add+del, graphWidth, maxChange)
			if total < 2 && add > 0 && del > 0 {
				total = 2
			}
			if add < del {
				add = scaleLinear(add, graphWidth, maxChange)
				del = total - add
			} else {
				del = scaleLinear(del, graphWidth, maxChange)
				add = total - del
			}
		}
		sep := ""
		if l.added+l.deleted > 0 {
			sep = " "
		}
		w.printf(" %s%s%s | %*d%s%s%s\n", prefix, name, pad, numberWidth, l.added+l.deleted, sep,
			strings.Repeat("+", add), strings.Repeat("-", del))
	}
	w.printf("%s\n", summary(len(lines), adds, dels))
}

// scaleLinear scales a count to the graph, giving any non-zero count at
// least one column.
func scaleLinear(it, width, maxChange int) int {
	if it == 0 {
		return 0
	}
	return 1 + it*(width-1)/maxChange
}

func decimalWidth(n int) int { return len(strconv.Itoa(n)) }

func summary(files, adds, dels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, " %d %s changed", files, plural(files, "file", "files"))
	if adds > 0 || dels == 0 {
		fmt.Fprintf(&b, ", %d %s(+)", adds, plural(adds, "insertion", "insertions"))
	}
	if dels > 0 || adds == 0 {
		fmt.Fprintf(&b, ", %d %s(-)", dels, plural(dels, "deletion", "deletions"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
