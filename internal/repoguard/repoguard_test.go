package repoguard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

func TestChanged(t *testing.T) {
	testbin.Require(t, "git", "a fingerprint asks git where the repository is")
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "init", "-q", base)
	cmd.Env = testbin.Environ(t.TempDir(), t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	ctx := context.Background()
	was, err := Take(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := was.Changed(); err != nil || len(changed) != 0 {
		t.Fatalf("Changed right after Take: %q, %v", changed, err)
	}
	gitDir := filepath.Join(base, ".git")
	if err := os.MkdirAll(filepath.Join(gitDir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitDir, "hooks", "post-checkout"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(gitDir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("[alias]\n\tst = !sh -c true\n")
	f.Close()
	changed, err := was.Changed()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(gitDir, "config"), filepath.Join(gitDir, "hooks")}
	if !slices.Equal(changed, want) {
		t.Errorf("Changed = %q, want %q", changed, want)
	}
}
