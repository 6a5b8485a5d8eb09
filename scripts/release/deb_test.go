package main

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goreleaser/nfpm/v2/files"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestDebPassesLintian builds the .deb of this machine's architecture
// from a real airlock binary and the release's docs, as release.sh does:
// it installs the copyright (DEP-5, Apache-2.0 pointing at
// common-licenses, with the notices of the modules the binary links), the
// changelog and lintian's overrides, and lintian finds no error in it.
// The same package without its copyright file is refused by lint, naming
// the tag, and so is one whose copyright file holds the Apache License's
// terms in full, as a module's LICENSE does, rather than point at
// common-licenses: the check this test trusts can fail.
func TestDebPassesLintian(t *testing.T) {
	testbin.Require(t, "lintian", "it checks the .deb against Debian policy")
	dpkgDeb := testbin.Require(t, "dpkg-deb", "it lists and unpacks the .deb")
	if runtime.GOOS != "linux" {
		t.Skip("the .deb holds a Linux binary; build it on Linux")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	bin := filepath.Join(dir, "airlock")
	// As release.sh builds it: lintian refuses an unstripped binary.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/airlock")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/airlock: %v\n%s", err, out)
	}
	docsDir := filepath.Join(dir, "docs")
	must(t, docs([]string{"-version", "v0.0.0-20231114221320-abcdef123456", docsDir}))
	deb := filepath.Join(dir, "airlock.deb")
	must(t, debian([]string{"-o", deb, "-version", "v0.0.0-20231114221320-abcdef123456",
		"-commit", "abcdef1234567890abcdef1234567890abcdef12", "-arch", runtime.GOARCH, "-bin", bin, "-docs", docsDir}))

	out, err := exec.Command(dpkgDeb, "--contents", deb).Output()
	must(t, err)
	for _, want := range []string{"copyright", "changelog.gz", "../../lintian/overrides/airlock"} {
		p := path.Clean("./usr/share/doc/airlock/" + want)
		if !regexp.MustCompile(`(?m)^-rw-r--r-- root/root .* \./` + regexp.QuoteMeta(p) + `$`).Match(out) {
			t.Errorf("the .deb does not install /%s, root's and 0644:\n%s", p, out)
		}
	}
	x := filepath.Join(dir, "x")
	must(t, exec.Command(dpkgDeb, "--extract", deb, x).Run())
	copyright, err := os.ReadFile(filepath.Join(x, "usr", "share", "doc", "airlock", "copyright"))
	must(t, err)
	for _, want := range []string{
		"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n",
		"\nFiles: *\nCopyright: 2026 The airlock authors\nLicense: Apache-2.0\n",
		`"/usr/share/common-licenses/Apache-2.0"`,
	} {
		if !strings.Contains(string(copyright), want) {
			t.Errorf("the copyright file has no %q:\n%s", want, copyright)
		}
	}
	if err := lint([]string{deb}); err != nil {
		t.Error(err)
	}

	// The same package without its copyright file.
	tmp := t.TempDir()
	info, err := debPackage(debSource{version: "v1.2.3", commit: "abcdef1234567890abcdef1234567890abcdef12",
		arch: runtime.GOARCH, bin: bin, docs: docsDir, when: time.Unix(1700000000, 0).UTC()}, tmp)
	must(t, err)
	info.Contents = slices.DeleteFunc(info.Contents, func(c *files.Content) bool { return c.Destination == "/usr/share/doc/airlock/copyright" })
	bare := filepath.Join(dir, "bare.deb")
	must(t, writeDeb(info, bare))
	if err := lint([]string{bare}); err == nil || !strings.Contains(err.Error(), "E: airlock: no-copyright-file") {
		t.Errorf("lint of a .deb without its copyright file: %v, want lintian's no-copyright-file", err)
	}

	// The same package with the Apache License's terms in its copyright
	// file, as cobra's LICENSE.txt holds them.
	ns, err := linkedNotices(bin)
	must(t, err)
	var apacheText string
	for _, n := range ns {
		for _, f := range n.files {
			for _, s := range f.spans {
				if s.lic.spdx == "Apache-2.0" && !s.lic.part {
					apacheText = f.text
				}
			}
		}
	}
	if apacheText == "" {
		t.Fatal("no module airlock links is under the Apache License: the test needs another of its text")
	}
	full := filepath.Join(tmp, "copyright-full")
	must(t, os.WriteFile(full, append(copyright, []byte("\nLicense: Apache-2.0-full\n"+dep5Text(apacheText))...), 0o644))
	for _, c := range info.Contents {
		if c.Destination == "/usr/share/doc/airlock/changelog.gz" {
			info.Contents = append(info.Contents, &files.Content{Source: full, Destination: "/usr/share/doc/airlock/copyright", FileInfo: c.FileInfo})
			break
		}
	}
	withFull := filepath.Join(dir, "full.deb")
	must(t, writeDeb(info, withFull))
	if err := lint([]string{withFull}); err == nil || !strings.Contains(err.Error(), "copyright-file-contains-full-apache-2-license") {
		t.Errorf("lint of a .deb whose copyright holds the Apache License in full: %v, want lintian's copyright-file-contains-full-apache-2-license", err)
	}
}

// TestDebVersion: a pre-release sorts before its release ("~") and no
// "-" is left to start a Debian revision, so every release is a native
// package; dpkg agrees on the order.
func TestDebVersion(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"v1.2.3", "1.2.3"},
		{"v1.2.3-rc1", "1.2.3~rc1"},
		{"v1.2.3-rc-1", "1.2.3~rc.1"},
		{"v1.2.3+meta-x", "1.2.3+meta.x"},
		{"v0.0.0-20231114221320-abcdef123456", "0.0.0~20231114221320.abcdef123456"},
	} {
		up, pre, meta, err := debVersion(c.in)
		must(t, err)
		got := up
		if pre != "" {
			got += "~" + pre
		}
		if meta != "" {
			got += "+" + meta
		}
		if got != c.want {
			t.Errorf("debVersion(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"1.2.3", "vx", "v"} {
		if _, _, _, err := debVersion(bad); err == nil {
			t.Errorf("debVersion(%q) took it", bad)
		}
	}
	dpkg, err := exec.LookPath("dpkg")
	if err != nil {
		testbin.Missing(t, "dpkg is not installed (it compares Debian versions)")
	}
	for _, lt := range [][2]string{{"1.2.3~rc1", "1.2.3"}, {"0.0.0~20231114221320.abcdef123456", "0.0.0~20231115000000.000000000000"}} {
		if err := exec.Command(dpkg, "--compare-versions", lt[0], "lt", lt[1]).Run(); err != nil {
			t.Errorf("dpkg --compare-versions %s lt %s: %v", lt[0], lt[1], err)
		}
	}
}
