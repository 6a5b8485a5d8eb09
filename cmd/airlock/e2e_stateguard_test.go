package main_test

import (
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// forgeState is what a command that wants a later transaction to trust
// its bytes tries: rewrite the cached clock facts, plant a tree in a
// base's pool, leave a file in the state root; and what it may do: write
// its own tree and its transaction's hook scratch directory (the hooks of
// an agent run inside it check there). Its own transaction's record,
// manifests and fingerprints are airlock's: a forged record's staged path
// once made gc remove the real base.
const forgeState = `s=$AIRLOCK_STATE_DIR
for f in "$s/fsclock.json" "$s/planted"; do
  echo x >> "$f" 2>/dev/null && echo "wrote $f"
done
for d in $(find "$s/bases" -type d -name pool); do
  mkdir "$d/forged" 2>/dev/null && echo "wrote $d/forged"
done
for d in "$s"/tx/*; do
  [ "$d" = "$s/tx/$AIRLOCK_TX" ] || { echo x > "$d/planted" 2>/dev/null && echo "wrote $d/planted"; }
done
for f in open.json open.manifest base.links.json git.json repoguard.json planted; do
  echo x >> "$s/tx/$AIRLOCK_TX/$f" 2>/dev/null && echo "wrote own $f"
done
echo x > "$s/tx/$AIRLOCK_TX/hook/own" && echo own-ok
echo mine > mine`

// TestE2ECommandCannotForgeState: under airlock run the state root is
// read-only to the command, all but its tree and hook scratch directory:
// nothing it writes can make a later transaction trust bytes the base does
// not hold (a forged pool record, a clock claimed finer than it is), or
// make recover replay a journal it wrote. As root (the accident) and as a
// user who is not (the namespace's mounts are locked for the command).
func TestE2ECommandCannotForgeState(t *testing.T) {
	check := func(t *testing.T, code int, stdout, stderr string) {
		t.Helper()
		if code != 0 {
			t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
		}
		if strings.Contains(stdout, "wrote") {
			t.Errorf("the command wrote airlock's state outside its own transaction:\n%s", stdout)
		}
		if !strings.Contains(stdout, "own-ok") {
			t.Errorf("the command could not write its transaction's hook scratch directory:\n%s\n%s", stdout, stderr)
		}
		if !strings.Contains(stderr, "airlock.added=1") {
			t.Errorf("the command's own change did not commit:\n%s", stderr)
		}
	}
	t.Run("root", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{"a": F(0o644, "a\n")})
		x.needContain()
		wantCode(t, x.airlock("run", "--workdir", x.base, "--", "true"), 0) // a pooled tree, the clock's cache
		open := x.airlock("open", "--workdir", x.base, "--id", "other")
		wantCode(t, open, 0)
		r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", forgeState)
		check(t, r.Code, r.Stdout, r.Stderr)
	})
	t.Run("user", func(t *testing.T) {
		w := newRootlessWorld(t, map[string]string{"a": "a\n"})
		if r := w.airlock("doctor"); !doctorSupports(r.Stdout, "contain") {
			testbin.Missing(t, "no PID namespace without root here (airlock doctor: contain unsupported)")
		}
		if r := w.airlock("run", "--", "true"); r.Code != 0 {
			t.Fatalf("run -- true: %s", r)
		}
		if r := w.airlock("open", "--id", "other"); r.Code != 0 {
			t.Fatalf("open: %s", r)
		}
		r := w.airlock("run", "--", "sh", "-c", forgeState)
		check(t, r.Code, r.Stdout, r.Stderr)
	})
}
