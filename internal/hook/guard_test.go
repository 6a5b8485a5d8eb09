package hook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestResolve: a path is taken as the kernel walks it: .. after a symlink
// leaves the link's target, and a file not there yet keeps its name.
func TestResolve(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"base/src", "staged/src"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "base", "src"), filepath.Join(root, "staged", "up")); err != nil {
		t.Fatal(err)
	}
	staged := filepath.Join(root, "staged")
	for _, c := range []struct{ p, want string }{
		{"a.txt", filepath.Join(staged, "a.txt")},
		{"up/new.txt", filepath.Join(root, "base", "src", "new.txt")},
		{"up/../x", filepath.Join(root, "base", "x")}, // lexically staged/x
		{"../base/./src//y", filepath.Join(root, "base", "src", "y")},
		{"nothere/../z", filepath.Join(staged, "z")},
	} {
		if got := resolve(staged, c.p); got != c.want {
			t.Errorf("resolve(%q) = %s, want %s", c.p, got, c.want)
		}
	}
}

// BenchmarkGuardCall is the guard's own decision per tool call, the part
// that does not depend on the store: a Write and a Bash line of ordinary
// length, both allowed (the common case). The whole hook, process start
// and store lookup included, is timed by scripts/guardcost.sh.
func BenchmarkGuardCall(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	scope := Scope{Base: filepath.Join(root, "base"), Staged: filepath.Join(root, "staged")}
	os.MkdirAll(scope.Base, 0o755)
	os.MkdirAll(filepath.Join(scope.Staged, "src"), 0o755)
	write, _ := json.Marshal(map[string]string{"file_path": filepath.Join(scope.Staged, "src", "main.go"), "content": "package main\n"})
	bash, _ := json.Marshal(map[string]string{"command": "cd src && go test ./... 2>&1 | tail -20 && git diff --stat"})
	b.Run("Write", func(b *testing.B) {
		for b.Loop() {
			if GuardCall("Write", write, scope.Staged, scope) != nil {
				b.Fatal("denied")
			}
		}
	})
	b.Run("Bash", func(b *testing.B) {
		for b.Loop() {
			if GuardCall("Bash", bash, scope.Staged, scope) != nil {
				b.Fatal("denied")
			}
		}
	})
}
