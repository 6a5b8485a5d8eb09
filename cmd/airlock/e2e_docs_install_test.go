package main_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeInstallsFromACheckout: the README's first install line clones
// the repository the module path names, enters the clone and installs
// from it, and what follows the cd installs a working airlock when run in
// a checkout (this one). `go install …@latest` cannot be the first line
// until the module is published.
func TestReadmeInstallsFromACheckout(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, install, ok := strings.Cut(string(b), "\n## Install\n")
	if !ok {
		t.Fatal(`README.md has no "## Install" section`)
	}
	install, _, _ = strings.Cut(install, "\n## ")
	_, block, ok := strings.Cut(install, "```sh\n")
	if !ok {
		t.Fatal("README.md's Install section has no sh block")
	}
	line, _, _ := strings.Cut(block, "\n")
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var module string
	for _, l := range strings.Split(string(mod), "\n") {
		if m, ok := strings.CutPrefix(l, "module "); ok {
			module = strings.TrimSpace(m)
		}
	}
	prefix := "git clone https://" + module + " && cd " + path.Base(module) + " && "
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		t.Fatalf("README.md's first install line is %q, want it to start %q: the module is not published, so only a checkout installs", line, prefix)
	}
	gobin := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "bash", "-c", rest)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s, in a checkout: %v\n%s", rest, err, out)
	}
	out, err := exec.CommandContext(t.Context(), filepath.Join(gobin, "airlock"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "airlock ") {
		t.Fatalf("the installed airlock version: %v\n%s", err, out)
	}
}
