package gitbase

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotOfSubdirectoryBase(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testbin.Missing(t, "git is not installed: gitbase has nothing to read")
	}
	repo := t.TempDir()
	run(t, repo, "init", "-q")
	write(t, filepath.Join(repo, "top.txt"), "top\n")
	write(t, filepath.Join(repo, "sub", "clean.txt"), "clean\n")
	write(t, filepath.Join(repo, "sub", "dirty.txt"), "v1\n")
	write(t, filepath.Join(repo, "sub", "staged.txt"), "s1\n")
	if err := os.Symlink("clean.txt", filepath.Join(repo, "sub", "link")); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "add", ".")
	run(t, repo, "commit", "-q", "-m", "init")
	write(t, filepath.Join(repo, "sub", "dirty.txt"), "v2\n")
	write(t, filepath.Join(repo, "sub", "staged.txt"), "s2\n")
	run(t, repo, "add", "sub/staged.txt")
	write(t, filepath.Join(repo, "sub", "untracked.txt"), "u\n")
	write(t, filepath.Join(repo, "top.txt"), "top changed\n")

	ctx := context.Background()
	s, err := Take(ctx, filepath.Join(repo, "sub"))
	if err != nil || s == nil {
		t.Fatalf("Take: %v, %v", s, err)
	}
	if s.Prefix != "sub/" {
		t.Errorf("Prefix = %q, want sub/", s.Prefix)
	}
	slices.Sort(s.Dirty)
	if !slices.Equal(s.Dirty, []string{"dirty.txt", "staged.txt"}) {
		t.Errorf("Dirty = %q, want dirty.txt and staged.txt (top.txt is outside the base)", s.Dirty)
	}
	for p, want := range map[string]bool{"clean.txt": true, "dirty.txt": false, "staged.txt": false} {
		if got := s.Clean(p); got != want {
			t.Errorf("Clean(%s) = %v, want %v", p, got, want)
		}
	}
	b, ok, err := s.Blob(ctx, filepath.Join(repo, "sub"), "dirty.txt")
	if err != nil || !ok || string(b) != "v1\n" {
		t.Errorf("Blob(dirty.txt) = %q, %v, %v; want HEAD's v1", b, ok, err)
	}
	for _, p := range []string{"untracked.txt", "link", "missing"} {
		if _, ok, err := s.Blob(ctx, filepath.Join(repo, "sub"), p); ok || err != nil {
			t.Errorf("Blob(%s) = ok %v, err %v; want no blob", p, ok, err)
		}
	}
}

func TestNotARepository(t *testing.T) {
	s, err := Take(context.Background(), t.TempDir())
	if s != nil || err != nil {
		t.Fatalf("Take outside a repository = %v, %v; want nil, nil", s, err)
	}
}

// A GIT_DIR or GIT_INDEX_FILE left in airlock's environment (by a git hook
// or an editor that started it) names another repository or index than the
// base's: the snapshot must still be the base's own, or a merge would take
// its ancestor from the wrong history.
func TestSnapshotIgnoresHostileGitEnvironment(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testbin.Missing(t, "git is not installed: gitbase has nothing to read")
	}
	repo := t.TempDir()
	run(t, repo, "init", "-q")
	write(t, filepath.Join(repo, "a.txt"), "base v1\n")
	write(t, filepath.Join(repo, "b.txt"), "b\n")
	run(t, repo, "add", ".")
	run(t, repo, "commit", "-q", "-m", "init")
	write(t, filepath.Join(repo, "b.txt"), "b changed\n")

	other := t.TempDir()
	run(t, other, "init", "-q")
	write(t, filepath.Join(other, "a.txt"), "other history\n")
	run(t, other, "add", ".")
	run(t, other, "commit", "-q", "-m", "other")

	ctx := context.Background()
	want, err := Take(ctx, repo)
	if err != nil || want == nil {
		t.Fatalf("Take: %v, %v", want, err)
	}
	for _, env := range [][2]string{
		{"GIT_DIR", filepath.Join(other, ".git")},
		{"GIT_INDEX_FILE", filepath.Join(other, ".git", "index")},
		{"GIT_WORK_TREE", other},
	} {
		t.Run(env[0], func(t *testing.T) {
			t.Setenv(env[0], env[1])
			got, err := Take(ctx, repo)
			if err != nil || got == nil {
				t.Fatalf("Take with %s=%s: %v, %v; want the base's snapshot", env[0], env[1], got, err)
			}
			if got.Head != want.Head || got.Prefix != want.Prefix || !slices.Equal(got.Dirty, want.Dirty) {
				t.Errorf("Take with %s=%s = %+v; want the base's own %+v", env[0], env[1], got, want)
			}
			b, ok, err := got.Blob(ctx, repo, "a.txt")
			if err != nil || !ok || string(b) != "base v1\n" {
				t.Errorf("Blob(a.txt) with %s=%s = %q, %v, %v; want the base's HEAD %q", env[0], env[1], b, ok, err, "base v1\n")
			}
		})
	}
}

// A repository without a commit has no ancestors to offer; one whose
// base directory's name holds a newline keeps its whole prefix.
func TestSnapshotUnbornAndOddPrefix(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testbin.Missing(t, "git is not installed: gitbase has nothing to read")
	}
	repo := t.TempDir()
	run(t, repo, "init", "-q")
	odd := filepath.Join(repo, "a\nb")
	write(t, filepath.Join(odd, "f"), "f\n")
	for _, dir := range []string{repo, odd} {
		if s, err := Take(context.Background(), dir); s != nil || err != nil {
			t.Fatalf("Take of %q before the first commit = %v, %v; want nil, nil", dir, s, err)
		}
	}
	run(t, repo, "add", ".")
	run(t, repo, "commit", "-q", "-m", "init")
	s, err := Take(context.Background(), odd)
	if err != nil || s == nil || s.Prefix != "a\nb/" || len(s.Head) < 40 {
		t.Fatalf("Take = %+v, %v; want prefix %q and HEAD", s, err, "a\nb/")
	}
}
