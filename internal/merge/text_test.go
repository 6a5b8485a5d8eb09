package merge

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

func TestText(t *testing.T) {
	const conflict = "<conflict>"
	tests := []struct {
		name                   string
		ancestor, ours, theirs string
		want                   string // conflict for a conflict
	}{
		{"ours unchanged", "a\nb\nc\n", "a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n"},
		{"theirs unchanged", "a\nb\nc\n", "a\nB\nc\n", "a\nb\nc\n", "a\nB\nc\n"},
		{"nothing changed", "a\nb\n", "a\nb\n", "a\nb\n", "a\nb\n"},
		{"distant edits", "1\n2\n3\n4\n5\n", "one\n2\n3\n4\n5\n", "1\n2\n3\n4\nfive\n", "one\n2\n3\n4\nfive\n"},
		{"edits one line apart", "1\n2\n3\n4\n5\n", "1\ntwo\n3\n4\n5\n", "1\n2\n3\nfour\n5\n", "1\ntwo\n3\nfour\n5\n"},
		{"edits to adjacent lines", "1\n2\n3\n4\n", "1\ntwo\n3\n4\n", "1\n2\nthree\n4\n", conflict},
		{"edit then insertion right after it", "1\n2\n3\n", "1\ntwo\n3\n", "1\n2\nnew\n3\n", conflict},
		{"insertion right before an edit", "1\n2\n3\n", "1\nnew\n2\n3\n", "1\ntwo\n3\n", conflict},
		{"same line edited differently", "1\n2\n3\n", "1\nX\n3\n", "1\nY\n3\n", conflict},
		{"same edit on both sides", "1\n2\n3\n", "1\nX\n3\n", "1\nX\n3\n", "1\nX\n3\n"},
		{"same edit plus distant edits", "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			"1\nX\n3\n4\n5\n6\n7\nY\n9\n", "1\nX\n3\n4\nZ\n6\n7\n8\n9\n", "1\nX\n3\n4\nZ\n6\n7\nY\n9\n"},
		{"same edit shaped differently", "1\n2\n3\n4\n5\n", "1\nX\nY\n4\n5\n", "1\nX\n3\n4\n5\n", conflict},
		{"different insertions at one point", "1\n2\n", "1\nA\n2\n", "1\nB\n2\n", conflict},
		{"same insertion at one point", "1\n2\n", "1\nA\n2\n", "1\nA\n2\n", "1\nA\n2\n"},
		{"appends on both sides", "1\n", "1\nA\n", "1\nB\n", conflict},
		{"prepend and append", "1\n2\n", "0\n1\n2\n", "1\n2\n3\n", "0\n1\n2\n3\n"},
		{"distant deletions", "1\n2\n3\n4\n5\n", "2\n3\n4\n5\n", "1\n2\n3\n4\n", "2\n3\n4\n"},
		{"same deletion", "1\n2\n3\n", "1\n3\n", "1\n3\n", "1\n3\n"},
		{"deletion against edit", "1\n2\n3\n", "1\n3\n", "1\nX\n3\n", conflict},
		{"overlapping deletions", "1\n2\n3\n4\n", "1\n4\n", "1\n2\n4\n", conflict},
		{"no final newline anywhere", "a\nb\nc", "A\nb\nc", "a\nb\nC", "A\nb\nC"},
		{"last line edited, no final newline", "a\nb\nc\nd", "A\nb\nc\nd", "a\nb\nc\nD", "A\nb\nc\nD"},
		{"final newline added against distant edit", "a\nb\nc", "a\nb\nc\n", "A\nb\nc", "A\nb\nc\n"},
		{"final newline added against append", "a\nb", "a\nb\n", "a\nb\nc", conflict},
		{"final newline removed on both sides", "a\nb\n", "a\nb", "a\nb", "a\nb"},
		{"CRLF distant edits", "1\r\n2\r\n3\r\n4\r\n", "one\r\n2\r\n3\r\n4\r\n", "1\r\n2\r\n3\r\nfour\r\n", "one\r\n2\r\n3\r\nfour\r\n"},
		{"CRLF without final newline", "1\r\n2\r\n3", "1\r\n2\r\nthree", "one\r\n2\r\n3", "one\r\n2\r\nthree"},
		{"line endings converted against an edit", "1\n2\n3\n", "1\r\n2\r\n3\r\n", "1\nX\n3\n", conflict},
		{"one line's ending changed far from an edit", "1\n2\n3\n4\n", "1\r\n2\n3\n4\n", "1\n2\n3\nX\n", "1\r\n2\n3\nX\n"},
		{"all empty", "", "", "", ""},
		{"added to an empty file on one side", "", "x\n", "", "x\n"},
		{"added to an empty file on both sides alike", "", "x\n", "x\n", "x\n"},
		{"added to an empty file differently", "", "x\n", "y\n", conflict},
		{"emptied on one side", "a\nb\n", "", "a\nb\n", ""},
		{"emptied against an edit", "a\nb\n", "", "a\nB\n", conflict},
		{"emptied on both sides", "a\nb\n", "", "", ""},
		{"blank lines", "\n\n\n\n\n", "x\n\n\n\n\n", "\n\n\n\n\ny\n", "x\n\n\n\n\ny\n"},
		{"repeated lines align like git", "a\na\nb\na\na\n", "a\nb\na\na\n", "a\na\nb\na\nX\n", "a\nb\na\nX\n"},
	}
	// The table holds without git; git, when present, must agree with
	// it, and CI must have it (newOracle fails there without it).
	var o *oracle
	if _, err := exec.LookPath("git"); err == nil || testbin.InCI() {
		o = newOracle(t)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := Text([]byte(tt.ancestor), []byte(tt.ours), []byte(tt.theirs))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == conflict && ok:
				t.Errorf("merged to %q, want a conflict", got)
			case tt.want != conflict && !ok:
				t.Errorf("conflict, want %q", tt.want)
			case ok && string(got) != tt.want:
				t.Errorf("merged to %q, want %q", got, tt.want)
			case !ok && got != nil:
				t.Errorf("conflict returned content %q", got)
			}
			if o == nil {
				return
			}
			// Pin the table itself to git, so no expectation is made up.
			gitOut, gitOK := o.merge(t, []byte(tt.ancestor), []byte(tt.ours), []byte(tt.theirs))
			if gitOK != (tt.want != conflict) || gitOK && string(gitOut) != tt.want {
				t.Errorf("git merge-file disagrees with the table: clean=%v %q", gitOK, gitOut)
			}
		})
	}
}

func TestTextDoesNotAliasInputs(t *testing.T) {
	anc, ours, theirs := []byte("a\nb\n"), []byte("a\nb\n"), []byte("a\nB\n")
	got, ok, err := Text(anc, ours, theirs)
	if err != nil || !ok {
		t.Fatalf("Text = %v, %v", ok, err)
	}
	got[0] = 'z'
	if string(theirs) != "a\nB\n" {
		t.Errorf("writing to the result changed theirs to %q", theirs)
	}
}

func TestTextRefusesNonText(t *testing.T) {
	text := []byte("a\n")
	big := bytes.Repeat([]byte("line\n"), MaxTextSize/5+1)
	nul := []byte("a\x00b\n")
	tests := []struct {
		name                   string
		ancestor, ours, theirs []byte
		wantIn                 string
	}{
		{"NUL in ancestor", nul, text, text, "ancestor version holds a NUL"},
		{"NUL in ours", text, nul, text, "our version holds a NUL"},
		{"NUL in theirs", text, text, nul, "their version holds a NUL"},
		{"too large", text, big, text, "byte limit"},
		{"too many lines", text, text, bytes.Repeat([]byte("\n"), MaxTextLines+1), "line limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := Text(tt.ancestor, tt.ours, tt.theirs)
			if !errors.Is(err, ErrNotText) || ok || got != nil {
				t.Fatalf("Text = %q, %v, %v; want ErrNotText", got, ok, err)
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q does not say %q", err, tt.wantIn)
			}
		})
	}
}

func TestIsText(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want bool
	}{
		{"empty", nil, true},
		{"plain", []byte("hello\nworld"), true},
		{"CRLF and UTF-8", []byte("h\u00e9llo\r\n"), true},
		{"invalid UTF-8 without NUL", []byte{0xff, 0xfe, '\n'}, true},
		{"NUL first", []byte{0, 'a'}, false},
		{"NUL at byte 7999", append(bytes.Repeat([]byte("a"), 7999), 0), false},
		{"NUL at byte 8000, past git's sniff", append(bytes.Repeat([]byte("a"), 8000), 0), true},
		{"at the size limit", bytes.Repeat([]byte("a"), MaxTextSize), true},
		{"over the size limit", bytes.Repeat([]byte("a"), MaxTextSize+1), false},
		{"at the line limit", bytes.Repeat([]byte("\n"), MaxTextLines), true},
		{"at the line limit, last line unterminated", append(bytes.Repeat([]byte("\n"), MaxTextLines-1), 'x'), true},
		{"over the line limit", bytes.Repeat([]byte("\n"), MaxTextLines+1), false},
		{"over the line limit by an unterminated line", append(bytes.Repeat([]byte("\n"), MaxTextLines), 'x'), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsText(tt.b); got != tt.want {
				t.Errorf("IsText = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTextGivesUpPastItsWorkLimit(t *testing.T) {
	// Two sides that share almost nothing but a few repeated values force
	// the search to spend; a tiny limit must stop it, a large one not.
	var anc, ours, theirs strings.Builder
	for i := range 300 {
		fmt.Fprintf(&anc, "%d\n", i%3)
		fmt.Fprintf(&ours, "%d\n", i*7%5)
		fmt.Fprintf(&theirs, "%d\n", i%3)
	}
	theirs.WriteString("end\n")
	a, o, th := []byte(anc.String()), []byte(ours.String()), []byte(theirs.String())
	if _, _, err := text(a, o, th, 1000); !errors.Is(err, ErrTooCostly) {
		t.Fatalf("with a 1000-step limit: err = %v, want ErrTooCostly", err)
	}
	if _, _, err := text(a, o, th, maxSteps); err != nil {
		t.Fatalf("with the real limit: %v", err)
	}
}
