package main

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// A license is a known license text: its words, compared with a module's
// license file word for word (case, spacing, line breaks, list markers
// and quote styles aside), so that a file is called MIT only if it holds
// the MIT license's exact terms. A <<var>> word in the text stands for
// the few words a license lets each copy fill in (BSD's "Neither the name
// of Google LLC").
type license struct {
	spdx string // the SPDX id: MIT
	dep5 string // the name Debian's copyright format gives it: Expat
	// part marks a text that belongs to a license without naming one by
	// itself: the Apache License's last line and its appendix, which says
	// how to apply it, both of which copies of it may leave out.
	part  bool
	words []string
}

//go:embed licenses
var licenseFS embed.FS

// knownLicenses are the licenses the release recognises. A module under
// another one fails the release, naming the module and its file: add the
// license's text to licenses/ and a line here.
var knownLicenses = []*license{
	{spdx: "Apache-2.0", dep5: "Apache-2.0", words: licenseWords("Apache-2.0.txt")},
	{spdx: "Apache-2.0", dep5: "Apache-2.0", part: true, words: licenseWords("Apache-2.0-end.txt")},
	{spdx: "Apache-2.0", dep5: "Apache-2.0", part: true, words: licenseWords("Apache-2.0-appendix.txt")},
	{spdx: "MIT", dep5: "Expat", words: licenseWords("MIT.txt")},
	{spdx: "BSD-3-Clause", dep5: "BSD-3-clause", words: licenseWords("BSD-3-Clause.txt")},
}

func licenseWords(name string) []string {
	data, err := licenseFS.ReadFile("licenses/" + name)
	if err != nil {
		panic(err)
	}
	var words []string
	for _, w := range tokenize(string(data)) {
		words = append(words, w.word)
	}
	return words
}

// varWord stands for the words a copy of a license fills in; maxVarWords
// bounds them, so that a <<var>> never swallows a clause.
const (
	varWord     = "<<var>>"
	maxVarWords = 12
)

// A token is a word of a text, normalised for comparison, and where it
// sits in the text.
type token struct {
	word       string
	start, end int
}

// listMarker is a word that only numbers or bullets a clause ("*", "1.",
// "(a)", "(iii)"): copies of a license differ in these and nothing else.
var listMarker = regexp.MustCompile(`^(\*|-|•|[0-9]{1,2}\.|\([a-z0-9]{1,4}\))$`)

// tokenize splits text into its words, lower case, with typographic
// quotes made plain and list markers left out.
func tokenize(text string) []token {
	var toks []token
	start := -1
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := strings.ToLower(text[start:end])
		w = strings.NewReplacer("“", `"`, "”", `"`, "‘", "'", "’", "'", "https://", "http://").Replace(w)
		if !listMarker.MatchString(w) {
			toks = append(toks, token{w, start, end})
		}
		start = -1
	}
	for i, r := range text {
		if unicode.IsSpace(r) {
			flush(i)
		} else if start < 0 {
			start = i
		}
	}
	flush(len(text))
	return toks
}

// matchAt reports where words, a known license's text, ends in toks if
// it starts at toks[i]: the index after its last token.
func matchAt(toks []token, i int, words []string) (int, bool) {
	for j := 0; j < len(words); j++ {
		if words[j] == varWord {
			// The fewest words that let the rest match.
			for n := 1; n <= maxVarWords && i+n <= len(toks); n++ {
				if end, ok := matchAt(toks, i+n, words[j+1:]); ok {
					return end, true
				}
			}
			return 0, false
		}
		if i >= len(toks) || toks[i].word != words[j] {
			return 0, false
		}
		i++
	}
	return i, true
}

// A span is a known license's text found in a file, by byte offsets.
type span struct {
	lic        *license
	start, end int
}

// findLicenses finds each known license text in text, in order.
func findLicenses(text string) []span {
	toks := tokenize(text)
	var found []span
	for i := 0; i < len(toks); {
		matched := false
		for _, l := range knownLicenses {
			if end, ok := matchAt(toks, i, l.words); ok {
				found = append(found, span{l, toks[i].start, toks[end-1].end})
				i, matched = end, true
				break
			}
		}
		if !matched {
			i++
		}
	}
	return found
}

// copyrightLine is a line that states a copyright, which a license file
// carries besides its license's terms.
var copyrightLine = regexp.MustCompile(`(?i)^\s*(copyright\b|\(c\)|©)`)

// titleLines are the headings a license file may put above or below its
// license's terms, normalised as tokenize does.
var titleLines = map[string]bool{
	"mit license":              true,
	"the mit license":          true,
	"the mit license (mit)":    true,
	"apache license":           true,
	"bsd 3-clause license":     true,
	"the 3-clause bsd license": true,
}

// A licenseFile is a module's license file and what it was found to hold.
type licenseFile struct {
	name string // LICENSE, COPYING, ...
	text string
	// spans are the known licenses in it, in order.
	spans []span
	// copyright are its lines that state a copyright, as written.
	copyright []string
	// other is the rest of its words, besides the licenses, the
	// copyright lines, headings and separators, as tokenize writes them:
	// text nobody has compared with a known license.
	other string
}

// identify finds what a license file holds.
func identify(name, text string) licenseFile {
	f := licenseFile{name: name, text: text, spans: findLicenses(text)}
	var rest strings.Builder
	last := 0
	for _, s := range f.spans {
		rest.WriteString(text[last:s.start])
		rest.WriteString("\n")
		last = s.end
	}
	rest.WriteString(text[last:])
	var other []string
	for _, line := range strings.Split(rest.String(), "\n") {
		var words []string
		for _, t := range tokenize(line) {
			words = append(words, t.word)
		}
		switch norm := strings.Join(words, " "); {
		case norm == "", titleLines[norm], strings.Trim(norm, "-=*_ ") == "":
		case copyrightLine.MatchString(line):
			f.copyright = append(f.copyright, strings.TrimSpace(line))
		default:
			other = append(other, norm)
		}
	}
	f.other = strings.Join(other, " ")
	return f
}

// licenses are the SPDX ids of the licenses f holds, each once.
func (f licenseFile) licenses() []*license {
	var ls []*license
	for _, s := range f.spans {
		if !s.lic.part && !containsLicense(ls, s.lic) {
			ls = append(ls, s.lic)
		}
	}
	return ls
}

func containsLicense(ls []*license, l *license) bool {
	for _, x := range ls {
		if x.spdx == l.spdx {
			return true
		}
	}
	return false
}

// otherSum is the SHA-256 of a file's other text, as reviewed.txt names
// text someone has read and accepted.
func otherSum(other string) string {
	sum := sha256.Sum256([]byte(other))
	return hex.EncodeToString(sum[:])
}

// reviewedText is licenses/reviewed.txt: for each module, the sums of the
// other text its license files may hold (read by a person, who wrote down
// why it changes nothing the notices say).
func reviewedText() (map[string]map[string]bool, error) {
	data, err := licenseFS.ReadFile("licenses/reviewed.txt")
	if err != nil {
		return nil, err
	}
	reviewed := map[string]map[string]bool{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 || len(fields[1]) != sha256.Size*2 {
			return nil, fmt.Errorf("licenses/reviewed.txt:%d: want MODULE SHA256 REASON", n+1)
		}
		if reviewed[fields[0]] == nil {
			reviewed[fields[0]] = map[string]bool{}
		}
		reviewed[fields[0]][fields[1]] = true
	}
	return reviewed, nil
}
