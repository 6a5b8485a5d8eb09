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
//	release deb -o FILE -version V -arch ARCH -bin BINARY -docs DIR
//	release static BINARY...
//	release sums DIR
package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
		fail(errors.New("usage: release docs|tar|deb|static|sums ..."))
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "docs":
		err = docs(args)
	case "tar":
		err = tarball(args)
	case "deb":
		err = debian(args)
	case "static":
		err = static(args)
	case "sums":
		err = sums(args)
	default:
		err = fmt.Errorf("unknown step %q (want docs, tar, deb, static or sums)", os.Args[1])
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *version == "" || *arch == "" || *bin == "" || *docsDir == "" || fs.NArg() != 0 {
		return errors.New("usage: release deb -o FILE -version V -arch ARCH -bin BINARY -docs DIR")
	}
	when, err := epoch()
	if err != nil {
		return err
	}
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode, MTime: when}}
	}
	contents := files.Contents{
		file(*bin, "/usr/bin/airlock", 0o755),
		file(filepath.Join(*docsDir, "completions", "airlock.bash"), "/usr/share/bash-completion/completions/airlock", 0o644),
		file(filepath.Join(*docsDir, "completions", "_airlock"), "/usr/share/zsh/vendor-completions/_airlock", 0o644),
		file(filepath.Join(*docsDir, "completions", "airlock.fish"), "/usr/share/fish/vendor_completions.d/airlock.fish", 0o644),
	}
	pages, err := filepath.Glob(filepath.Join(*docsDir, "man", "*.1"))
	if err != nil || len(pages) == 0 {
		return fmt.Errorf("no man pages in %s/man: run release docs first", *docsDir)
	}
	// Debian installs man pages compressed; gzip's header then holds
	// neither a name nor a time.
	tmp, err := os.MkdirTemp("", "airlock-deb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, p := range pages {
		gz := filepath.Join(tmp, filepath.Base(p)+".gz")
		if err := gzipFile(p, gz); err != nil {
			return err
		}
		contents = append(contents, file(gz, "/usr/share/man/man1/"+filepath.Base(gz), 0o644))
	}
	info := nfpm.WithDefaults(&nfpm.Info{
		Name:        "airlock",
		Arch:        *arch,
		Platform:    "linux",
		Version:     *version,
		Section:     "devel",
		Priority:    "optional",
		Maintainer:  "airlock developers <dev@airlock.invalid>",
		Description: "Transactions over a directory for coding agents\nairlock runs a command in a staged copy of a directory and applies its\nchanges back only through one all-or-nothing, fail-closed, journaled commit.",
		Homepage:    "https://github.com/airlockdev/airlock",
		MTime:       when,
		Overridables: nfpm.Overridables{
			Contents: contents,
			// git runs the worktree backend and tells the merge the
			// ancestors a base's repository knows; the rest of airlock
			// works without it.
			Recommends: []string{"git"},
			Suggests:   []string{"bash-completion"},
		},
	})
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := deb.Default.Package(info, f); err != nil {
		return fmt.Errorf("package %s: %w", *out, err)
	}
	return f.Close()
}

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
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
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
