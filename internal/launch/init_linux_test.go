package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFallbackWithoutInit: a binary that never called Init cannot be its
// own helper; same-path mode is then refused with that reason and the
// command runs at the staged path.
func TestFallbackWithoutInit(t *testing.T) {
	if !initCalled.Load() {
		t.Fatal("TestMain did not call Init")
	}
	initCalled.Store(false)
	defer initCalled.Store(true)
	if ok, reason := SamePathSupport(); ok || reason != reasonNoInit {
		t.Errorf("SamePathSupport = %v, %q; want false, %q", ok, reason, reasonNoInit)
	}
	staged := t.TempDir()
	var out bytes.Buffer
	res, err := Run(t.Context(), Spec{
		Argv: []string{"pwd"}, Staged: staged, Base: t.TempDir(), SamePath: true,
		Env: []string{"PATH=" + os.Getenv("PATH")}, Stdout: &out,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if res.SamePath || res.Fallback != reasonNoInit {
		t.Errorf("result %+v, want fallback %q", res, reasonNoInit)
	}
	if out.String() != staged+"\n" {
		t.Errorf("pwd printed %q, want the staged path %q", out.String(), staged)
	}
}

// TestMountNeedsTheHelper: a workspace that exists only once mounted has
// no staged path to fall back to, so without the helper Run fails saying
// why, and the command never runs.
func TestMountNeedsTheHelper(t *testing.T) {
	initCalled.Store(false)
	defer initCalled.Store(true)
	staged := t.TempDir()
	res, err := Run(t.Context(), Spec{
		Argv: []string{"touch", "ran"}, Staged: staged, Base: t.TempDir(), SamePath: true,
		Env:   []string{"PATH=" + os.Getenv("PATH")},
		Mount: &Mount{FSType: "tmpfs", Source: "tmpfs"},
	})
	if err == nil || res.ExitCode != -1 || !strings.Contains(err.Error(), reasonNoInit) {
		t.Fatalf("Run = %+v, %v; want exit -1 and an error saying %q", res, err, reasonNoInit)
	}
	if _, err := os.Lstat(filepath.Join(staged, "ran")); err == nil {
		t.Error("the command ran at the staged path")
	}
}
