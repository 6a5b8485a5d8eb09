package review_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrowserTestHelpersAreTheseHelpers: browsertest (a module of its own,
// which cannot import this package's _test.go files) has a copy of
// main_test.go; the copy must be this file from its imports on, so that
// the browser test drives airlock as these tests do.
func TestBrowserTestHelpersAreTheseHelpers(t *testing.T) {
	body := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(b), "\nimport (")
		if !ok {
			t.Fatalf("%s has no import block", p)
		}
		return rest
	}
	copied := filepath.Join("browsertest", "main_test.go")
	if body(copied) != body("main_test.go") {
		t.Errorf("%s differs from main_test.go after its package clause: copy main_test.go's imports and helpers there (diff them to see what changed)", copied)
	}
}
