package project

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/config"
)

func TestFind(t *testing.T) {
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(rel string) string {
		p := filepath.Join(top, filepath.FromSlash(rel))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	proj, repo := mk("proj/src/pkg"), mk("repo/sub")
	mk("repo/.git")
	if err := os.WriteFile(filepath.Join(top, "proj", config.FileName), []byte("protect = [\"secrets/\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Above the repository's top level: not the repository's config.
	if err := os.WriteFile(filepath.Join(top, config.FileName), []byte("validate = \"false\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	p, err := Find(proj)
	if err != nil {
		t.Fatal(err)
	}
	if p.Root != filepath.Join(top, "proj") || p.Under != "src/pkg" || p.Cfg.Path == "" {
		t.Errorf("Find(proj/src/pkg) = root %s under %q config %q, want proj, src/pkg, its config", p.Root, p.Under, p.Cfg.Path)
	}
	r, err := Find(repo)
	if err != nil {
		t.Fatal(err)
	}
	if r.Root != repo || r.Under != "" || r.Cfg.Validate != "" {
		t.Errorf("Find(repo/sub) = root %s under %q validate %q, want its own root, the default config", r.Root, r.Under, r.Cfg.Validate)
	}

	sel, err := NewSelector([]string{"secrets/", "/src/pkg/gen.go"}, p.Under)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"gen.go", false, true},        // /src/pkg/gen.go, relative to the project root
		{"secrets", true, true},        // matched wherever it is
		{"other/gen.go", false, false}, // not at the root's src/pkg
	} {
		if got := sel.Match(tt.rel, tt.isDir); got != tt.want {
			t.Errorf("Match(%q) = %v, want %v", tt.rel, got, tt.want)
		}
	}
}
