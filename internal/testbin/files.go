package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// RealDir is a fresh temporary directory by its symlink-free path, which is
// the path airlock reports for a base.
func RealDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// WriteFiles creates root and, beneath it, each slash-separated path with
// its content (mode 0644, parents 0755).
func WriteFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ReadFile returns a file's content, failing the test if it cannot.
func ReadFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Exists reports whether anything (a dangling symlink too) is at p.
func Exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
