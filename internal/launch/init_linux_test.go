package launch

import (
	"bytes"
	"os"
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
