package main

import (
	"bufio"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// A notice is what the release ships for one piece of code linked into
// the binary that is not airlock's own: a Go module, or the Go standard
// library and runtime (module std), with its license and notice files as
// the module ships them.
type notice struct {
	module, version string
	// replacedBy is the module and version the build used instead, if
	// go.mod replaced it: its files are the ones linked.
	replacedBy string
	dir        string
	// licenses are the known licenses its license files hold, in the
	// order found.
	licenses []*license
	// copyright are the lines that state its copyright.
	copyright []string
	// files are its license files (LICENSE, COPYING, ...) and then its
	// notice files (NOTICE, PATENTS), sorted by name within each.
	files   []licenseFile
	notices int // how many of files, at the end, are notice files
}

// spdx is the notice's license as an SPDX expression. A module whose
// license files hold several licenses is under all of them ("AND"): the
// release ships every text and complies with each, and never claims a
// choice between them that nobody checked.
func (n notice) spdx() string {
	var ids []string
	for _, l := range n.licenses {
		ids = append(ids, l.spdx)
	}
	return strings.Join(ids, " AND ")
}

// dep5 is the same in Debian's copyright format, whose names differ
// (Expat for MIT) and whose "and" is lower case.
func (n notice) dep5() string {
	var ids []string
	for _, l := range n.licenses {
		ids = append(ids, l.dep5)
	}
	return strings.Join(ids, " and ")
}

// noticesCmd writes the notices of a binary's third-party code, the file
// a tarball carries next to LICENSE.
func noticesCmd(args []string) error {
	fs := flag.NewFlagSet("notices", flag.ContinueOnError)
	out := fs.String("o", "", "the file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() != 1 {
		return errors.New("usage: release notices -o FILE BINARY")
	}
	ns, err := linkedNotices(fs.Arg(0))
	if err != nil {
		return err
	}
	return os.WriteFile(*out, []byte(noticesText(ns)), 0o644)
}

// goEnv is what the go command says of where modules and the toolchain
// live.
type goEnv struct{ modCache, goroot, goVersion string }

func readGoEnv() (goEnv, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOROOT", "GOVERSION").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return goEnv{}, fmt.Errorf("go env GOMODCACHE GOROOT GOVERSION: %v\n%s", err, exit.Stderr)
		}
		return goEnv{}, fmt.Errorf("go env GOMODCACHE GOROOT GOVERSION: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		return goEnv{}, fmt.Errorf("go env GOMODCACHE GOROOT GOVERSION said %q: want three lines", out)
	}
	return goEnv{lines[0], lines[1], lines[2]}, nil
}

// linkedNotices are the notices of everything bin links that is not
// airlock's own: the modules its build information names, exactly those
// and at those versions, each read from the module cache the build used,
// and the Go standard library of the toolchain that built it. A module
// whose license files are missing or unrecognised fails, naming it: a
// release never ships with a notice silently left out.
func linkedNotices(bin string) ([]notice, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("%s: no Go build information: %w", bin, err)
	}
	env, err := readGoEnv()
	if err != nil {
		return nil, err
	}
	reviewed, err := reviewedText()
	if err != nil {
		return nil, err
	}
	if info.GoVersion != env.goVersion {
		return nil, fmt.Errorf("%s was built by %s but the go command here is %s: its standard library's notices are the toolchain's that built it; run the release with one toolchain", bin, info.GoVersion, env.goVersion)
	}
	std, err := moduleNotice("std", info.GoVersion, env.goroot, reviewed)
	if err != nil {
		return nil, err
	}
	ns := []notice{std}
	for _, dep := range info.Deps {
		mod := dep
		replacedBy := ""
		if dep.Replace != nil {
			mod = dep.Replace
			if mod.Version == "" {
				return nil, fmt.Errorf("%s %s is replaced by the directory %s, which is not in the module cache: the release cannot tell which license files were linked; release from a go.mod without a local replace", dep.Path, dep.Version, mod.Path)
			}
			replacedBy = mod.Path + " " + mod.Version
		}
		dir := filepath.Join(env.modCache, escapeModule(mod.Path)+"@"+escapeModule(mod.Version))
		n, err := moduleNotice(dep.Path, dep.Version, dir, reviewed)
		if err != nil {
			return nil, err
		}
		n.replacedBy = replacedBy
		ns = append(ns, n)
	}
	slices.SortFunc(ns[1:], func(a, b notice) int { return strings.Compare(a.module, b.module) })
	return ns, nil
}

// escapeModule writes a module path or version as the module cache names
// its directory: each upper-case letter as "!" and its lower case
// (github.com/BurntSushi/toml is github.com/!burnt!sushi/toml), so that
// the cache works on case-insensitive file systems.
func escapeModule(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isLicenseFile and isNoticeFile say what a file at a module's root is by
// its name: LICENSE, LICENSE.md, LICENSE-MIT, LICENCE, COPYING... hold its
// license; NOTICE (which the Apache License requires shipped) and PATENTS
// (the Go project's patent grant) add to it. A Go file is code, whatever
// its name (license.go).
func isLicenseFile(name string) bool {
	return namedLike(name, "LICENSE", "LICENCE", "COPYING")
}

func isNoticeFile(name string) bool {
	return namedLike(name, "NOTICE", "PATENTS")
}

func namedLike(name string, prefixes ...string) bool {
	n := strings.ToUpper(name)
	if strings.HasSuffix(n, ".GO") {
		return false
	}
	for _, p := range prefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// moduleNotice reads the license and notice files at the root of a
// module's directory and identifies its licenses.
func moduleNotice(module, version, dir string, reviewed map[string]map[string]bool) (notice, error) {
	n := notice{module: module, version: version, dir: dir}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return n, fmt.Errorf("%s %s is linked but not in the module cache (%s): run go mod download %s@%s", module, version, dir, module, version)
	}
	if err != nil {
		return n, fmt.Errorf("%s %s: %w", module, version, err)
	}
	var licenseFiles, noticeFiles []licenseFile
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || !(isLicenseFile(name) || isNoticeFile(name)) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return n, fmt.Errorf("%s %s: %w", module, version, err)
		}
		text := strings.ReplaceAll(string(data), "\r\n", "\n")
		if isNoticeFile(name) {
			noticeFiles = append(noticeFiles, licenseFile{name: name, text: text})
			continue
		}
		f := identify(name, text)
		if len(f.licenses()) == 0 {
			return n, fmt.Errorf("%s %s: %s holds no license the release knows (licenses/ has %s): read it, and if it is a free license add its text to scripts/release/licenses", module, version, filepath.Join(dir, name), knownNames())
		}
		if f.other != "" && !reviewed[module][otherSum(f.other)] {
			return n, fmt.Errorf("%s %s: %s holds text besides its licenses (%s) that nobody has read:\n  %s\nread it, and if it changes nothing the notices say, add to scripts/release/licenses/reviewed.txt:\n  %s %s (why)",
				module, version, filepath.Join(dir, name), licenseIDs(f.licenses()), excerpt(f.other), module, otherSum(f.other))
		}
		licenseFiles = append(licenseFiles, f)
		for _, l := range f.licenses() {
			if !containsLicense(n.licenses, l) {
				n.licenses = append(n.licenses, l)
			}
		}
		n.copyright = appendNew(n.copyright, f.copyright...)
	}
	if len(licenseFiles) == 0 {
		return n, fmt.Errorf("%s %s: no license file (LICENSE, LICENCE, COPYING) in %s: its copyright and license notices cannot ship with the binary, and the release does not ship without them", module, version, dir)
	}
	for _, f := range noticeFiles {
		for _, line := range strings.Split(f.text, "\n") {
			if copyrightLine.MatchString(line) {
				n.copyright = appendNew(n.copyright, strings.TrimSpace(line))
			}
		}
	}
	if len(n.copyright) == 0 {
		// The Apache License's text names no holder: the module's
		// sources do, at the head of each file.
		n.copyright, err = sourceCopyright(dir)
		if err != nil {
			return n, fmt.Errorf("%s %s: %w", module, version, err)
		}
		if len(n.copyright) == 0 {
			return n, fmt.Errorf("%s %s: neither its license files nor its Go files in %s state a copyright: name its holder before it ships", module, version, dir)
		}
	}
	n.files = append(licenseFiles, noticeFiles...)
	n.notices = len(noticeFiles)
	return n, nil
}

func appendNew(list []string, items ...string) []string {
	for _, s := range items {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

// sourceCopyright is the copyright lines at the head of the module's Go
// files (before each file's package clause), each distinct line once.
func sourceCopyright(dir string) ([]string, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && (d.Name() == "testdata" || d.Name() == "vendor" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "package ") {
				break
			}
			if c, ok := strings.CutPrefix(line, "//"); ok && copyrightLine.MatchString(c) {
				lines = appendNew(lines, strings.TrimSpace(c))
			}
		}
		return sc.Err()
	})
	slices.Sort(lines)
	return lines, err
}

func knownNames() string {
	var names []string
	for _, l := range knownLicenses {
		if !l.part && !slices.Contains(names, l.spdx) {
			names = append(names, l.spdx)
		}
	}
	return strings.Join(names, ", ")
}

func licenseIDs(ls []*license) string {
	var ids []string
	for _, l := range ls {
		ids = append(ids, l.spdx)
	}
	return strings.Join(ids, ", ")
}

// excerpt is the start of a long text, enough to find it in its file.
func excerpt(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// holder is a copyright line without its "Copyright" and "(c)", as
// Debian's copyright format writes a holder: "2013 TOML authors".
func holder(line string) string {
	for {
		trimmed := strings.TrimSpace(line)
		for _, p := range []string{"copyright", "(c)", "©"} {
			if len(trimmed) >= len(p) && strings.EqualFold(trimmed[:len(p)], p) {
				trimmed = strings.TrimLeft(trimmed[len(p):], " :")
			}
		}
		if trimmed == strings.TrimSpace(line) {
			return trimmed
		}
		line = trimmed
	}
}

const rule = "--------------------------------------------------------------------------------\n"

// noticesText is THIRD_PARTY_NOTICES: each linked module's name, version
// and license, and its license and notice files word for word.
func noticesText(ns []notice) string {
	var b strings.Builder
	b.WriteString(`Third-party notices for airlock

The airlock binary links the code below besides airlock's own (which is
under the Apache License 2.0: see LICENSE). Each is listed by its Go
module and version, with its license as an SPDX expression, followed by
its license and notice files as the module ships them.
`)
	for _, n := range ns {
		b.WriteString("\n" + rule)
		b.WriteString(n.title() + "\n")
		b.WriteString("License: " + n.spdx() + "\n")
		for _, f := range n.files {
			b.WriteString("\n" + rule)
			fmt.Fprintf(&b, "%s of %s:\n\n", f.name, n.module)
			b.WriteString(strings.TrimRight(f.text, "\n") + "\n")
		}
	}
	return b.String()
}

// title names the notice's code: its module and version, or the Go
// standard library and its toolchain.
func (n notice) title() string {
	t := n.module + " " + n.version
	if n.module == "std" {
		t = "The Go standard library and runtime (module std) of " + n.version
	}
	if n.replacedBy != "" {
		t += " (replaced by " + n.replacedBy + ")"
	}
	return t
}

// apachePointer stands in the .deb's copyright file for the Apache
// License's terms, which Debian keeps once, in common-licenses: lintian
// refuses a copyright file that holds them in full.
const apachePointer = "[The terms of the Apache License, Version 2.0. On Debian systems its\ncomplete text can be found in \"/usr/share/common-licenses/Apache-2.0\".]"

// copyrightParagraphs are the Files paragraphs of the .deb's copyright
// file (Debian's format, DEP-5), one per notice. Each names its code as
// Debian does vendored Go modules (vendor/MODULE/*), its holders and its
// license, with the text of its license and notice files, except that the
// Apache License's terms point at common-licenses; a module under that
// license alone, with nothing more to say, points at the file's own
// Apache-2.0 paragraph instead.
func copyrightParagraphs(ns []notice) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "\nFiles: vendor/%s/*\n", n.module)
		var holders []string
		for _, c := range n.copyright {
			holders = appendNew(holders, holder(c))
		}
		for i, h := range holders {
			if i == 0 {
				b.WriteString("Copyright: " + h + "\n")
			} else {
				b.WriteString("           " + h + "\n")
			}
		}
		b.WriteString("License: " + n.dep5() + "\n")
		if !n.apacheOnly() {
			var text []string
			for _, f := range n.files {
				t := f.text
				if len(f.spans) > 0 {
					t = withApachePointer(f)
				}
				if len(n.files) > 1 {
					t = f.name + ":\n\n" + t
				}
				text = append(text, strings.TrimRight(t, "\n"))
			}
			b.WriteString(dep5Text(strings.Join(text, "\n\n")))
		}
		fmt.Fprintf(&b, "Comment: %s, linked into /usr/bin/airlock.\n", n.title())
	}
	return b.String()
}

// apacheOnly: the notice's license files hold the Apache License and
// nothing else but headings and copyright lines, and it has no notice
// file.
func (n notice) apacheOnly() bool {
	if n.notices > 0 || len(n.licenses) != 1 || n.licenses[0].spdx != "Apache-2.0" {
		return false
	}
	for _, f := range n.files {
		if f.other != "" {
			return false
		}
	}
	return true
}

// withApachePointer is f's text with the Apache License's terms (and its
// appendix) replaced by apachePointer.
func withApachePointer(f licenseFile) string {
	var b strings.Builder
	last := 0
	for _, s := range f.spans {
		if s.lic.spdx != "Apache-2.0" {
			continue
		}
		// Whole lines, so that the pointer is not indented as the
		// license's heading was.
		start := strings.LastIndexByte(f.text[:s.start], '\n') + 1
		if strings.TrimSpace(f.text[start:s.start]) != "" || start < last {
			start = s.start
		}
		b.WriteString(f.text[last:start])
		if !s.lic.part {
			b.WriteString(apachePointer)
		}
		last = s.end
	}
	b.WriteString(f.text[last:])
	return b.String()
}

// dep5Text writes text as the continuation lines of a field: each line
// indented by one space, an empty line as " ." (several as one: the
// Apache License's terms leave gaps where they were).
func dep5Text(text string) string {
	var b strings.Builder
	blank := false
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		line = strings.TrimRight(strings.ReplaceAll(line, "\t", "        "), " ")
		switch {
		case line == "" && !blank:
			b.WriteString(" .\n")
		case line != "":
			b.WriteString(" " + line + "\n")
		}
		blank = line == ""
	}
	return b.String()
}
