package airlock_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGoDocSnippetsCompile: every Go block of docs/go.md builds against
// this package as it is, so the page a harness author copies from cannot
// name an option, field or method that is gone. Each block is the body of
// a function of its own that is given what the page takes as known (ctx,
// repo, ids, and st after the first block).
func TestGoDocSnippetsCompile(t *testing.T) {
	page, err := os.ReadFile("docs/go.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(page, -1)
	if len(blocks) < 3 {
		t.Fatalf("docs/go.md has %d Go blocks, want the open, run and land ones", len(blocks))
	}
	var src strings.Builder
	src.WriteString("package docgo\n\nimport (\n\t\"context\"\n\t\"errors\"\n\t\"os\"\n\n\t\"github.com/airlockdev/airlock\"\n)\n\n")
	src.WriteString("var _, _, _ = errors.As, os.Stdout, context.Background\n\n")
	for i, b := range blocks {
		params := "ctx context.Context, repo string, ids []string, st *airlock.Store"
		if i == 0 {
			params = "ctx context.Context, repo string"
		}
		// Names a snippet declares only to show them are used here.
		src.WriteString("func snippet" + string(rune('A'+i)) + "(" + params + ") {\n" + string(b[1]) + "\n}\n\n")
	}
	dir, err := os.MkdirTemp(".", "_docgo")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "docgo.go"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "vet", "./"+filepath.Base(dir)).CombinedOutput()
	if err != nil {
		var real []string
		for _, l := range strings.Split(string(out), "\n") {
			// A snippet shows a result it does not go on to use.
			if l != "" && !strings.Contains(l, "declared and not used") && !strings.HasPrefix(l, "#") {
				real = append(real, l)
			}
		}
		if len(real) > 0 {
			t.Errorf("docs/go.md's Go blocks do not build against the package:\n%s\n\nas compiled:\n%s", strings.Join(real, "\n"), src.String())
		}
	}
}
