package main

import (
	"archive/zip"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// buildAirlock builds cmd/airlock as release.sh does (static, trimmed,
// stripped) into dir.
func buildAirlock(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "airlock")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", bin, "./cmd/airlock")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/airlock: %v\n%s", err, out)
	}
	return bin
}

// moduleFiles are the license and notice files at the root of a module's
// directory, by name, read here apart from the code under test.
func moduleFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	files := map[string]string{}
	for _, e := range ents {
		n := strings.ToUpper(e.Name())
		if strings.HasSuffix(n, ".GO") {
			continue
		}
		for _, p := range []string{"LICENSE", "LICENCE", "COPYING", "NOTICE", "PATENTS"} {
			if strings.HasPrefix(n, p) {
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				must(t, err)
				files[e.Name()] = string(data)
			}
		}
	}
	if len(files) == 0 {
		t.Fatalf("%s has no license file", dir)
	}
	return files
}

func goEnvVar(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	must(t, err)
	return strings.TrimSpace(string(out))
}

// TestNoticesCoverEveryLinkedModule builds airlock as a release does and
// reads the modules it links from its own build information: each, and
// the Go standard library, has its notice in THIRD_PARTY_NOTICES (its
// license files word for word) and a Files paragraph in the .deb's
// copyright file, whose text holds every line of its license and notice
// files but the Apache License's terms, which point at common-licenses.
// The licenses of the modules whose texts we know are pinned.
func TestNoticesCoverEveryLinkedModule(t *testing.T) {
	dpkgDeb := testbin.Require(t, "dpkg-deb", "it unpacks the .deb")
	if runtime.GOOS != "linux" {
		t.Skip("the .deb holds a Linux binary; build it on Linux")
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	bin := buildAirlock(t, dir)
	tpn := filepath.Join(dir, "THIRD_PARTY_NOTICES")
	must(t, noticesCmd([]string{"-o", tpn, bin}))
	data, err := os.ReadFile(tpn)
	must(t, err)
	notices := string(data)

	docsDir := filepath.Join(dir, "docs")
	must(t, docs([]string{"-version", "v1.2.3", docsDir}))
	deb := filepath.Join(dir, "airlock.deb")
	must(t, debian([]string{"-o", deb, "-version", "v1.2.3", "-commit", "abcdef1234567890abcdef1234567890abcdef12",
		"-arch", runtime.GOARCH, "-bin", bin, "-docs", docsDir}))
	x := filepath.Join(dir, "x")
	must(t, exec.Command(dpkgDeb, "--extract", deb, x).Run())
	data, err = os.ReadFile(filepath.Join(x, "usr", "share", "doc", "airlock", "copyright"))
	must(t, err)
	copyright := string(data)
	if strings.Contains(copyright, "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION") {
		t.Error("the copyright file holds the Apache License's terms in full, which lintian refuses")
	}

	// The Apache License's words, which the copyright file leaves to
	// common-licenses: a line of a module's file that is a run of them
	// (however the module's copy wraps its lines) need not be there.
	common, err := os.ReadFile("/usr/share/common-licenses/Apache-2.0")
	must(t, err)
	apacheWords := " " + strings.Join(strings.Fields(string(common)), " ") + " "
	apache := func(line string) bool {
		return strings.Contains(apacheWords, " "+strings.Join(strings.Fields(line), " ")+" ")
	}

	info, err := buildinfo.ReadFile(bin)
	must(t, err)
	if len(info.Deps) < 5 {
		t.Fatalf("%s links %d modules: its build information is not what the test expects", bin, len(info.Deps))
	}
	type linked struct{ title, paragraph, dir, spdx string }
	all := []linked{{"The Go standard library and runtime (module std) of " + info.GoVersion, "std", goEnvVar(t, "GOROOT"), "BSD-3-Clause"}}
	modCache := goEnvVar(t, "GOMODCACHE")
	pinned := map[string]string{
		"github.com/BurntSushi/toml":             "MIT",
		"github.com/spf13/cobra":                 "Apache-2.0",
		"github.com/spf13/pflag":                 "BSD-3-Clause",
		"github.com/modelcontextprotocol/go-sdk": "Apache-2.0 AND MIT",
		"golang.org/x/sys":                       "BSD-3-Clause",
	}
	for _, d := range info.Deps {
		all = append(all, linked{d.Path + " " + d.Version, d.Path, filepath.Join(modCache, escapeModule(d.Path)+"@"+escapeModule(d.Version)), pinned[d.Path]})
		delete(pinned, d.Path)
	}
	for m := range pinned {
		t.Errorf("airlock no longer links %s: update the test's pins", m)
	}
	for _, m := range all {
		// THIRD_PARTY_NOTICES: the title, the license, each file whole.
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m.title) + `\nLicense: (.+)$`)
		got := re.FindStringSubmatch(notices)
		if got == nil {
			t.Errorf("THIRD_PARTY_NOTICES has no %q", m.title)
			continue
		}
		if m.spdx != "" && got[1] != m.spdx {
			t.Errorf("THIRD_PARTY_NOTICES: %s is under %s, want %s", m.title, got[1], m.spdx)
		}
		files := moduleFiles(t, m.dir)
		for name, text := range files {
			if !strings.Contains(notices, strings.TrimRight(text, "\n")+"\n") {
				t.Errorf("THIRD_PARTY_NOTICES does not hold %s of %s", name, m.title)
			}
		}

		// The copyright file: the module's paragraph, and in it each
		// line of its files.
		para := regexp.MustCompile(`(?ms)^Files: vendor/` + regexp.QuoteMeta(m.paragraph) + `/\*\n.*?^Comment: ` + regexp.QuoteMeta(m.title) + `, linked into /usr/bin/airlock\.\n`).FindString(copyright)
		if para == "" {
			t.Errorf("the copyright file has no Files paragraph for %s", m.title)
			continue
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(para, "\n") {
			lines[strings.TrimSpace(l)] = true
		}
		for name, text := range files {
			for _, l := range strings.Split(text, "\n") {
				l = strings.TrimSpace(l)
				if l == "" || apache(l) || lines[l] || strings.HasPrefix(l, "Copyright") && strings.Contains(para, holder(l)) {
					continue
				}
				t.Errorf("the copyright file's paragraph for %s lacks this line of %s: %q\n%s", m.title, name, l, para)
				break
			}
		}
	}
}

// proxyModule is a module of a test's own, served by a file:// module
// proxy: its path, one Go file and its other files by name.
type proxyModule struct {
	path  string
	files map[string]string
}

// buildWith builds a program that imports mod, fetched through a file://
// GOPROXY into a module cache of the test's own, which it points the go
// command (and so the code under test) at; it returns the binary.
func buildWith(t *testing.T, mod proxyModule) string {
	t.Helper()
	dir := t.TempDir()
	proxy := filepath.Join(dir, "proxy", escapeModule(mod.path), "@v")
	must(t, os.MkdirAll(proxy, 0o755))
	const version = "v1.0.0"
	gomod := "module " + mod.path + "\n\ngo 1.21\n"
	must(t, os.WriteFile(filepath.Join(proxy, "list"), []byte(version+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(proxy, version+".info"), []byte(`{"Version":"`+version+`","Time":"2023-11-14T22:13:20Z"}`), 0o644))
	must(t, os.WriteFile(filepath.Join(proxy, version+".mod"), []byte(gomod), 0o644))
	zf, err := os.Create(filepath.Join(proxy, version+".zip"))
	must(t, err)
	zw := zip.NewWriter(zf)
	files := map[string]string{"go.mod": gomod, "lib.go": "package lib\n\nfunc Answer() int { return 42 }\n"}
	for name, text := range mod.files {
		files[name] = text
	}
	for name, text := range files {
		w, err := zw.Create(mod.path + "@" + version + "/" + name)
		must(t, err)
		_, err = w.Write([]byte(text))
		must(t, err)
	}
	must(t, zw.Close())
	must(t, zf.Close())

	src := filepath.Join(dir, "src")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/prog\n\ngo 1.21\n\nrequire "+mod.path+" "+version+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nimport lib \""+mod.path+"\"\n\nfunc main() { println(lib.Answer()) }\n"), 0o644))
	t.Setenv("GOMODCACHE", filepath.Join(dir, "modcache"))
	t.Setenv("GOFLAGS", "-modcacherw -mod=mod")
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(filepath.Join(dir, "proxy")))
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	t.Setenv("GOWORK", "off")
	bin := filepath.Join(dir, "prog")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of a program importing %s: %v\n%s", mod.path, err, out)
	}
	return bin
}

const mitText = `MIT License

Copyright (c) 2023 Example Authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`

// TestNoticesRefuseAModuleWithoutItsLicense builds real programs that
// link a module of the test's own, fetched through a module proxy into a
// module cache: with an MIT LICENSE (and a mixed-case path, which the
// cache escapes) its notice is found; without a license file, with a
// license the release does not know, or with the MIT license plus a
// clause nobody has read, the notices fail, naming the module.
func TestNoticesRefuseAModuleWithoutItsLicense(t *testing.T) {
	for _, c := range []struct {
		name  string
		mod   proxyModule
		want  string // in the error; "" for none
		spdx  string
		texts []string
	}{
		{"mit", proxyModule{"example.com/MixedCase/lib", map[string]string{"LICENSE": mitText, "NOTICE": "Example lib\nCopyright 2023 Example Authors\n", "license.go": "package lib\n"}},
			"", "MIT", []string{mitText, "Example lib\nCopyright 2023 Example Authors\n"}},
		{"none", proxyModule{"example.com/nolicense", map[string]string{"README.md": "MIT licensed, they say.\n"}},
			"example.com/nolicense v1.0.0: no license file", "", nil},
		{"unknown", proxyModule{"example.com/unknown", map[string]string{"COPYING": "Copyright 2023 Someone\n\nYou may use this on weekdays only.\n"}},
			"example.com/unknown v1.0.0: ", "", nil},
		{"extra clause", proxyModule{"example.com/evil", map[string]string{"LICENSE": mitText + "\nThe Software shall be used for Good, not Evil.\n"}},
			"example.com/evil v1.0.0: ", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := buildWith(t, c.mod)
			ns, err := linkedNotices(bin)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("linkedNotices: %v, want an error with %q", err, c.want)
				}
				if c.name == "extra clause" && !strings.Contains(err.Error(), "good, not evil") {
					t.Errorf("the error does not show the unread text: %v", err)
				}
				if c.name == "unknown" && !strings.Contains(err.Error(), "holds no license the release knows") {
					t.Errorf("the error does not say the license is unknown: %v", err)
				}
				return
			}
			must(t, err)
			text := noticesText(ns)
			if !strings.Contains(text, "\n"+c.mod.path+" v1.0.0\nLicense: "+c.spdx+"\n") {
				t.Errorf("the notices do not name %s under %s:\n%s", c.mod.path, c.spdx, text)
			}
			for _, want := range c.texts {
				if !strings.Contains(text, want) {
					t.Errorf("the notices do not hold %q", want)
				}
			}
			para := copyrightParagraphs(ns)
			if !strings.Contains(para, "Files: vendor/"+c.mod.path+"/*\nCopyright: 2023 Example Authors\nLicense: Expat\n") {
				t.Errorf("the copyright paragraphs do not name %s:\n%s", c.mod.path, para)
			}
		})
	}
}

// TestIdentify: a license is known by its words whatever its layout, and
// only by all of them; the few words a BSD license fills in vary.
func TestIdentify(t *testing.T) {
	head, body, _ := strings.Cut(mitText, "Permission")
	reflowed := head + strings.Join(strings.Fields("Permission"+body), " ")
	bsd, err := os.ReadFile(filepath.Join(goEnvVar(t, "GOROOT"), "LICENSE"))
	must(t, err)
	for _, c := range []struct {
		name, text, want string
		other            bool
	}{
		{"mit", mitText, "MIT", false},
		{"mit on one line", reflowed, "MIT", false},
		{"mit with a clause cut", strings.Replace(mitText, "copies or substantial portions of the Software.", "", 1), "", true},
		{"bsd of go", string(bsd), "BSD-3-Clause", false},
		{"bsd of another holder", strings.ReplaceAll(strings.ReplaceAll(string(bsd), "Google LLC", "the copyright holder"), "COPYRIGHT\nOWNER", "COPYRIGHT\nHOLDER"), "BSD-3-Clause", false},
		{"bsd numbered", strings.NewReplacer("   * Redistributions of source", "1. Redistributions of source", "   * Redistributions in", "2. Redistributions in", "   * Neither", "3. Neither").Replace(string(bsd)), "BSD-3-Clause", false},
	} {
		f := identify("LICENSE", c.text)
		if got := licenseIDs(f.licenses()); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if (f.other != "") != c.other {
			t.Errorf("%s: other text %q", c.name, f.other)
		}
	}
}
