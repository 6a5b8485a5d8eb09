package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EOverlaySamePath: with --backend overlay the command sees the
// merged tree at the base's own path, its writes (through the absolute
// path too) stay in the upper layer until the commit, and settling leaves
// no mount behind.
func TestE2EOverlaySamePath(t *testing.T) {
	x := newH(t)
	if err := os.MkdirAll(x.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := x.airlock("doctor"); !doctorSupports(r.Stdout, "overlay") || !doctorSupports(r.Stdout, "namespaces") {
		testbin.Missing(t, "overlay or mount namespaces unsupported here (airlock doctor):\n%s", r.Stdout)
	}
	build(t, x.base, tree{"sub/f": F(0o644, "f\n"), "gone": F(0o644, "g\n")})
	// An overlay trusts a base file's stat only once its ctime is older
	// than the open by the clock's window (docs/backends.md): the base is
	// the user's, written well before the run.
	waitPastClock(t, x.state, x.base, "sub/f", "gone")
	r := x.exec(run{
		dir:  x.base,
		env:  []string{"BASE=" + x.base},
		args: []string{"run", "--backend", "overlay", "--id", "ov", "--", "sh", "-c", `[ "$(pwd -P)" = "$BASE" ] && cat "$BASE/sub/f" && echo abs > "$BASE/abs.txt" && rm gone`},
	})
	wantCode(t, r, 0)
	if strings.Contains(r.Stderr, "same-path mode unavailable") {
		t.Errorf("same-path mode fell back with overlay:\n%s", r.Stderr)
	}
	wantBlock(t, r, map[string]string{"outcome": "committed", "added": "1", "deleted": "1", "modified": "0"})
	if got := testbin.ReadFile(t, filepath.Join(x.base, "abs.txt")); got != "abs\n" {
		t.Errorf("abs.txt = %q after the commit", got)
	}
	if testbin.Exists(filepath.Join(x.base, "gone")) {
		t.Error("gone is still in the base")
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mi), x.state) {
		t.Errorf("a mount under the state directory is left after the commit:\n%s", mi)
	}
}
