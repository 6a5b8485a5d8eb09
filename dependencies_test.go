package airlock_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testOnly are the modules airlock's go.mod may require although neither
// the binary nor the library links them, each with the reason it is not in a module
// of its own.
var testOnly = map[string]string{
	"github.com/rogpeppe/go-internal": "testscript runs cmd/airlock's script tests, which go test ./... must run",
}

// goModules are the go.mod files of this repository: airlock's and those
// of the modules that keep a test's or a release's dependencies out of it.
var goModules = []string{"go.mod", "internal/review/browsertest/go.mod", "scripts/release/go.mod"}

// TestDependenciesAreChosen holds docs/dependencies.md and the go.mod files
// to each other: every module a go.mod here requires directly is named
// there, and airlock's go.mod requires nothing only tests use (a
// dependency only a test needs lives in a module of its own, as
// internal/review/browsertest's chromedp does), save testOnly.
func TestDependenciesAreChosen(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "dependencies.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range goModules {
		for _, path := range directRequires(t, mod) {
			if path == "github.com/airlockdev/airlock" {
				continue
			}
			if !strings.Contains(string(doc), "`"+path+"`") {
				t.Errorf("%s requires %s, and docs/dependencies.md does not say why (name it there as `%s`)", mod, path, path)
			}
		}
	}

	linked := map[string]bool{}
	for _, goos := range []string{"linux", "darwin"} {
		// What a user gets: the binary and the library a harness imports
		// (every other package is internal to them, or a test helper).
		cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".", "./cmd/airlock")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list -deps . ./cmd/airlock: %v", goos, err)
		}
		for _, m := range strings.Fields(string(out)) {
			linked[m] = true
		}
	}
	required := map[string]bool{}
	for _, path := range directRequires(t, "go.mod") {
		required[path] = true
		if !linked[path] && testOnly[path] == "" {
			t.Errorf("go.mod requires %s, which neither the airlock binary nor the library links (only tests use it): move the tests that need it into a module of their own (as internal/review/browsertest is), or, if that would take them out of go test ./..., add it to testOnly with the reason", path)
		}
		if linked[path] && testOnly[path] != "" {
			t.Errorf("testOnly lists %s, which airlock links: remove it from testOnly", path)
		}
	}
	for path := range testOnly {
		if !required[path] {
			t.Errorf("testOnly lists %s, which go.mod does not require: remove it", path)
		}
	}
}

// directRequires reads the modules a go.mod requires directly (those
// without "// indirect"), from require lines and require blocks.
func directRequires(t *testing.T, gomod string) []string {
	t.Helper()
	f, err := os.Open(gomod)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var paths []string
	block := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var spec string
		switch {
		case line == "require (":
			block = true
			continue
		case block && line == ")":
			block = false
			continue
		case block:
			spec = line
		case strings.HasPrefix(line, "require "):
			spec = strings.TrimPrefix(line, "require ")
		default:
			continue
		}
		if strings.Contains(spec, "// indirect") {
			continue
		}
		if fields := strings.Fields(spec); len(fields) >= 2 && !strings.HasPrefix(fields[0], "//") {
			paths = append(paths, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("%s: found no require", gomod)
	}
	return paths
}
