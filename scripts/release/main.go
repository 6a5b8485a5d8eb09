// Command release packages airlock binaries that scripts/release.sh has
// built: man pages and completion scripts made from the command tree, a
// tarball per platform, a .deb per Linux architecture (built with nfpm),
// and SHA256SUMS. Every output is a function of its inputs and
// SOURCE_DATE_EPOCH: no clock, user, umask or directory order gets in,
// so two runs over the same commit give the same bytes.
//
// It is its own module, so that nfpm and go-md2man (with their own
// dependencies, dozens of modules) stay out of airlock's go.mod and out
// of every airlock build: only a release needs them.
//
// Usage:
//
//	release docs -version V DIR
//	release tar -o FILE -prefix NAME FILE=PATH-IN-ARCHIVE...
//	release deb -o FILE -version V -commit C -arch ARCH -bin BINARY -docs DIR
//	release notices -o FILE BINARY
//	release static BINARY...
//	release lint DEB...
//	release sums DIR
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	_ "embed"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/airlockdev/airlock/internal/cli"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: release docs|tar|notices|deb|static|lint|sums ..."))
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "docs":
		err = docs(args)
	case "tar":
		err = tarball(args)
	case "notices":
		err = noticesCmd(args)
	case "deb":
		err = debian(args)
	case "static":
		err = static(args)
	case "lint":
		err = lint(args)
	case "sums":
		err = sums(args)
	default:
		err = fmt.Errorf("unknown step %q (want docs, tar, notices, deb, static, lint or sums)", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "release: %v\n", err)
	os.Exit(1)
}

// epoch is SOURCE_DATE_EPOCH, the commit's time, which release.sh sets:
// the one time any output may carry.
func epoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want the commit's time in seconds (git log -1 --format=%%ct)", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// docs writes DIR/man/*.1 and DIR/completions/ from the command tree.
func docs(args []string) error {
	fs := flag.NewFlagSet("docs", flag.ContinueOnError)
	version := fs.String("version", "", "the version the pages name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *version == "" {
		return errors.New("usage: release docs -version V DIR")
	}
	when, err := epoch()
	if err != nil {
		return err
	}
	dir := fs.Arg(0)
	root := cli.Command()
	// The pages of a release name its version, not the packaging tool's.
	root.Version = *version
	man := filepath.Join(dir, "man")
	if err := os.MkdirAll(man, 0o755); err != nil {
		return err
	}
	fenceIndented(root)
	// No Title: cobra then titles each page with its own command
	// (AIRLOCK\-COMMIT), as man and apropos show it; one title for all
	// would head every page AIRLOCK(1).
	header := &doc.GenManHeader{Section: "1", Source: "airlock " + *version, Manual: "airlock manual", Date: &when}
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("man pages in %s: %w", man, err)
	}
	comp := filepath.Join(dir, "completions")
	if err := os.MkdirAll(comp, 0o755); err != nil {
		return err
	}
	for name, gen := range map[string]func(*cobra.Command, io.Writer) error{
		"airlock.bash": func(c *cobra.Command, w io.Writer) error { return c.GenBashCompletionV2(w, true) },
		"_airlock":     func(c *cobra.Command, w io.Writer) error { return c.GenZshCompletion(w) },
		"airlock.fish": func(c *cobra.Command, w io.Writer) error { return c.GenFishCompletion(w, true) },
	} {
		var b strings.Builder
		if err := gen(root, &b); err != nil {
			return fmt.Errorf("completion %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(comp, name), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// fenceIndented makes each command's indented lines in its long help a
// fenced block for the man page: cobra renders the help as Markdown, where
// lines indented less than four spaces are filled into the paragraph, so
// a table such as hook's events or init's agents came out as run-on text
// broken at the terminal's width. In a fence go-md2man writes them
// unfilled (.EX), column for column as --help prints them.
func fenceIndented(c *cobra.Command) {
	c.Long = fenceLines(c.Long)
	for _, sub := range c.Commands() {
		fenceIndented(sub)
	}
}

// fenceLines puts each run of indented lines of text between ``` lines,
// with a blank line either side so that the fence never joins a paragraph.
func fenceLines(text string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(text, "\n") {
		indented := strings.TrimSpace(l) != "" && (l[0] == ' ' || l[0] == '\t')
		switch {
		case indented && !in:
			b.WriteString("\n```\n")
			in = true
		case !indented && in:
			b.WriteString("```\n\n")
			in = false
		}
		b.WriteString(l)
		b.WriteString("\n")
	}
	if in {
		b.WriteString("```\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// tarball writes a .tar.gz of the files named SRC=DEST under one top
// directory, with fixed owners, modes by kind and SOURCE_DATE_EPOCH for
// every time: only the files' bytes vary.
func tarball(args []string) error {
	fs := flag.NewFlagSet("tar", flag.ContinueOnError)
	out := fs.String("o", "", "the .tar.gz to write")
	prefix := fs.String("prefix", "", "the archive's top directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *prefix == "" || fs.NArg() == 0 {
		return errors.New("usage: release tar -o FILE -prefix NAME SRC=DEST...")
	}
	when, err := epoch()
	if err != nil {
		return err
	}
	type entry struct{ src, dst string }
	var entries []entry
	for _, a := range fs.Args() {
		src, dst, ok := strings.Cut(a, "=")
		if !ok || src == "" || dst == "" || !filepath.IsLocal(dst) {
			return fmt.Errorf("tar: %q: want SRC=DEST with DEST a relative path", a)
		}
		entries = append(entries, entry{src, filepath.ToSlash(dst)})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.dst, b.dst) })

	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	// No name and no time in the gzip header: both would vary.
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	hdr := func(name string, mode int64, typ byte, size int64) *tar.Header {
		return &tar.Header{Name: name, Mode: mode, Typeflag: typ, Size: size, ModTime: when, Uname: "root", Gname: "root", Format: tar.FormatPAX}
	}
	top := strings.TrimSuffix(*prefix, "/") + "/"
	for _, e := range entries {
		// Parent directories first, each once.
		parts := strings.Split(top+e.dst, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/") + "/"
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(hdr(d, 0o755, tar.TypeDir, 0)); err != nil {
					return err
				}
			}
		}
		data, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		fi, err := os.Stat(e.src)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
		if err := tw.WriteHeader(hdr(top+e.dst, mode, tar.TypeReg, int64(len(data)))); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

// debian writes the .deb of one Linux architecture with nfpm: the binary
// in /usr/bin, the man pages and the completion scripts where Debian's
// man, bash-completion, zsh and fish look for them.
func debian(args []string) error {
	fs := flag.NewFlagSet("deb", flag.ContinueOnError)
	out := fs.String("o", "", "the .deb to write")
	version := fs.String("version", "", "the version (v1.2.3)")
	arch := fs.String("arch", "", "GOARCH: amd64 or arm64")
	bin := fs.String("bin", "", "the linux binary")
	docsDir := fs.String("docs", "", "the directory release docs wrote")
	commit := fs.String("commit", "", "the commit the release is built from")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *version == "" || *arch == "" || *bin == "" || *docsDir == "" || *commit == "" || fs.NArg() != 0 {
		return errors.New("usage: release deb -o FILE -version V -commit C -arch ARCH -bin BINARY -docs DIR")
	}
	when, err := epoch()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "airlock-deb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	info, err := debPackage(debSource{version: *version, commit: *commit, arch: *arch, bin: *bin, docs: *docsDir, when: when}, tmp)
	if err != nil {
		return err
	}
	return writeDeb(info, *out)
}

// debSource is what a .deb is made of: the release, the binary of one
// architecture, and the directory release docs wrote.
type debSource struct {
	version, commit, arch, bin, docs string
	when                             time.Time
}

// debPackage describes the .deb of src for nfpm, writing the files it
// makes (the compressed man pages, the changelog, the copyright) into tmp,
// which must outlast the packaging.
func debPackage(src debSource, tmp string) (*nfpm.Info, error) {
	upstream, pre, meta, err := debVersion(src.version)
	if err != nil {
		return nil, err
	}
	when := src.when
	file := func(from, to string, mode os.FileMode) *files.Content {
		return &files.Content{Source: from, Destination: to, FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: when}}
	}
	// Policy 12.5 and 12.7: every package carries its copyright and, a
	// native one, its changelog.gz; lintian's overrides sit where it
	// looks for a package's own. The copyright covers the binary's
	// third-party code too, whose licenses (MIT, BSD) ask that their
	// notices ship with every binary copy.
	notices, err := linkedNotices(src.bin)
	if err != nil {
		return nil, err
	}
	var copyright bytes.Buffer
	if err := debianCopyright.Execute(&copyright, struct{ Years, Notices string }{copyrightYears(when), copyrightParagraphs(notices)}); err != nil {
		return nil, err
	}
	packaged := map[string][]byte{
		"copyright":         copyright.Bytes(),
		"lintian-overrides": debianOverrides,
	}
	var changelog bytes.Buffer
	if err := gzipTo(&changelog, []byte(debChangelog(src.version, src.commit, when))); err != nil {
		return nil, err
	}
	packaged["changelog.gz"] = changelog.Bytes()
	for name, data := range packaged {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	contents := files.Contents{
		file(src.bin, "/usr/bin/airlock", 0o755),
		file(filepath.Join(tmp, "copyright"), "/usr/share/doc/airlock/copyright", 0o644),
		file(filepath.Join(tmp, "changelog.gz"), "/usr/share/doc/airlock/changelog.gz", 0o644),
		file(filepath.Join(tmp, "lintian-overrides"), "/usr/share/lintian/overrides/airlock", 0o644),
		file(filepath.Join(src.docs, "completions", "airlock.bash"), "/usr/share/bash-completion/completions/airlock", 0o644),
		file(filepath.Join(src.docs, "completions", "_airlock"), "/usr/share/zsh/vendor-completions/_airlock", 0o644),
		file(filepath.Join(src.docs, "completions", "airlock.fish"), "/usr/share/fish/vendor_completions.d/airlock.fish", 0o644),
	}
	pages, err := filepath.Glob(filepath.Join(src.docs, "man", "*.1"))
	if err != nil || len(pages) == 0 {
		return nil, fmt.Errorf("no man pages in %s/man: run release docs first", src.docs)
	}
	// Debian installs man pages compressed; gzip's header then holds
	// neither a name nor a time.
	for _, p := range pages {
		gz := filepath.Join(tmp, filepath.Base(p)+".gz")
		if err := gzipFile(p, gz); err != nil {
			return nil, err
		}
		contents = append(contents, file(gz, "/usr/share/man/man1/"+filepath.Base(gz), 0o644))
	}
	info := nfpm.WithDefaults(&nfpm.Info{
		Name:     "airlock",
		Arch:     src.arch,
		Platform: "linux",
		// Set apart so that nfpm writes them as they are rather than
		// parse the version themselves (debVersion says why).
		Version:         upstream,
		Prerelease:      pre,
		VersionMetadata: meta,
		Section:         "devel",
		Priority:        "optional",
		Maintainer:      maintainer,
		Description:     "Transactions over a directory for coding agents\nairlock runs a command in a staged copy of a directory and applies its\nchanges back only through one all-or-nothing, fail-closed, journaled commit.",
		Homepage:        "https://github.com/airlockdev/airlock",
		MTime:           when,
		Overridables: nfpm.Overridables{
			Contents: contents,
			// git runs the worktree backend and tells the merge the
			// ancestors a base's repository knows; the rest of airlock
			// works without it.
			Recommends: []string{"git"},
			Suggests:   []string{"bash-completion"},
		},
	})
	return info, nil
}

// writeDeb packages info as the .deb out.
func writeDeb(info *nfpm.Info, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := deb.Default.Package(info, f); err != nil {
		return fmt.Errorf("package %s: %w", out, err)
	}
	return f.Close()
}

// The Debian files of the package: the copyright in Debian's
// machine-readable format (DEP-5), and lintian's overrides, each tag with
// the reason it does not apply.
var (
	//go:embed debian/copyright
	debianCopyrightText string
	debianCopyright     = template.Must(template.New("copyright").Parse(debianCopyrightText))
	//go:embed debian/lintian-overrides
	debianOverrides []byte
)

// firstYear is the year of airlock's first commit, where its copyright
// notice starts.
const firstYear = 2026

// copyrightYears is the notice's span, from the first commit's year to
// the release commit's (2026, 2026-2028): a notice needs its years, and
// the commit's keeps the .deb a function of the commit.
func copyrightYears(when time.Time) string {
	if y := when.Year(); y > firstYear {
		return fmt.Sprintf("%d-%d", firstYear, y)
	}
	return strconv.Itoa(firstYear)
}

// debVersion splits a release's version (v1.2.3-rc1) into the parts of
// the package's Debian version: the release (1.2.3), the pre-release
// (rc1, written after "~" so that it sorts before its release) and the
// build metadata (after "+"). A "-" inside a part becomes ".": in a
// Debian version the last "-" starts the Debian revision, and airlock,
// its own upstream, is a native package without one. A Go
// pseudo-version v0.0.0-20231114221320-abcdef123456 is thus
// 0.0.0~20231114221320.abcdef123456, not upstream 0.0.0~20231114221320
// at revision abcdef123456. scripts/release.sh names the .deb by the
// same rule.
func debVersion(v string) (upstream, pre, meta string, err error) {
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return "", "", "", fmt.Errorf("version %q: want v followed by a semantic version (v1.2.3)", v)
	}
	rest, meta, _ = strings.Cut(rest, "+")
	upstream, pre, _ = strings.Cut(rest, "-")
	if upstream == "" || upstream[0] < '0' || upstream[0] > '9' {
		return "", "", "", fmt.Errorf("version %q: want v followed by a semantic version (v1.2.3)", v)
	}
	return upstream, strings.ReplaceAll(pre, "-", "."), strings.ReplaceAll(meta, "-", "."), nil
}

// debChangelog is the package's Debian changelog: one entry, this
// release, pointing at the history it was built from. Its date is the
// commit's, so the .deb stays a function of the commit.
func debChangelog(version, commit string, when time.Time) string {
	upstream, pre, meta, _ := debVersion(version)
	full := upstream
	if pre != "" {
		full += "~" + pre
	}
	if meta != "" {
		full += "+" + meta
	}
	// Lines within 80 columns, as lintian asks.
	return fmt.Sprintf(`airlock (%s) unstable; urgency=medium

  * Release %s, built from commit
    %s
    of https://github.com/airlockdev/airlock, whose history says what
    changed.

 -- %s  %s
`, full, version, commit, maintainer, when.Format(time.RFC1123Z))
}

// maintainer is the package's Maintainer, and the changelog entry's.
const maintainer = "airlock developers <dev@airlock.invalid>"

func gzipFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := gzipTo(f, data); err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	return f.Close()
}

// gzipTo compresses data as Debian asks (gzip -9n): best compression,
// and no name or time in the header, which would vary between builds.
func gzipTo(w io.Writer, data []byte) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	return zw.Close()
}

// static checks that each Linux binary is statically linked: no program
// interpreter and no dynamic section, so it runs on any Linux of its
// architecture whatever its libc.
func static(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release static BINARY...")
	}
	for _, p := range args {
		f, err := elf.Open(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				f.Close()
				return fmt.Errorf("%s is dynamically linked (it has %v): build it with CGO_ENABLED=0", p, prog.Type)
			}
		}
		f.Close()
	}
	return nil
}

// lint runs lintian, Debian's policy checker, on each .deb: an error
// (a tag a distribution would reject the package for) fails, naming its
// tags; warnings and the rest are printed and pass.
func lint(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release lint DEB...")
	}
	for _, p := range args {
		if err := lintDeb(p); err != nil {
			return err
		}
	}
	return nil
}

// lintDeb runs lintian on one .deb; see lint.
func lintDeb(p string) error {
	bin, err := exec.LookPath("lintian")
	if err != nil {
		return fmt.Errorf("%s: lintian is not installed (apt-get install lintian); it checks the .deb against Debian policy", p)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "--fail-on", "error", p)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	errs, rest := lintianTags(stdout.String())
	if len(rest) > 0 {
		fmt.Fprintf(os.Stderr, "release: lintian %s:\n  %s\n", p, strings.Join(rest, "\n  "))
	}
	var exit *exec.ExitError
	switch {
	case err == nil && len(errs) == 0:
		return nil
	case len(errs) > 0:
		return fmt.Errorf("lintian %s reports errors, which Debian policy does not allow (lintian --info %s explains each tag):\n  %s", p, p, strings.Join(errs, "\n  "))
	case errors.As(err, &exit):
		// Exit 2 is --fail-on's; without an E: line to show for it, or
		// with another status, lintian itself failed.
		return fmt.Errorf("lintian %s: %v\n%s%s", p, err, stdout.Bytes(), stderr.Bytes())
	default:
		return fmt.Errorf("lintian %s: %w", p, err)
	}
}

// lintianTags splits lintian's report into its errors ("E:" lines) and
// its other tags (warnings, information, overrides), each line as lintian
// wrote it: "E: airlock: no-copyright-file".
func lintianTags(report string) (errs, rest []string) {
	for _, l := range strings.Split(report, "\n") {
		kind, _, ok := strings.Cut(l, ": ")
		if !ok || len(kind) != 1 || kind == "N" {
			continue
		}
		if kind == "E" {
			errs = append(errs, l)
		} else {
			rest = append(rest, l)
		}
	}
	return errs, rest
}

// sums writes DIR/SHA256SUMS over DIR's files, sorted by name, in the
// format `sha256sum -c` reads.
func sums(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: release sums DIR")
	}
	dir := args[0]
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "SHA256SUMS" {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), e.Name())
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644)
}
