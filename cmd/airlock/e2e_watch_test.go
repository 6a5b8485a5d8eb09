package main_test

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// runJSON is the part of `run --json` these tests read.
type runJSON struct {
	Outcome   string `json:"outcome"`
	Added     int    `json:"added"`
	Modified  int    `json:"modified"`
	Deleted   int    `json:"deleted"`
	Measured  string `json:"measured"`
	Unwatched string `json:"unwatched"`
}

func (x *h) runJSON(env []string, script string) (result, runJSON) {
	x.t.Helper()
	r := x.airlockEnv(env, "run", "--json", "--workdir", x.base, "--", "sh", "-c", script)
	var j runJSON
	if err := json.Unmarshal([]byte(r.Stdout), &j); err != nil {
		x.t.Fatalf("run --json: %v\n%s\nstderr: %s", err, r.Stdout, r.Stderr)
	}
	return r, j
}

// needWatch skips (failing under CI=true) where a run cannot be watched:
// off Linux, or where the command cannot be contained.
func needWatch(t *testing.T, j runJSON) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the watch of a run is Linux-only")
	}
	if os.Getenv("AIRLOCK_NO_WATCH") == "1" {
		t.Skip("the suite runs with the watch off (AIRLOCK_NO_WATCH=1)")
	}
	if j.Measured != "watch" && (strings.Contains(j.Unwatched, "not contained") || strings.Contains(j.Unwatched, "seccomp")) {
		testbin.Missing(t, "a watched run here (%s)", j.Unwatched)
	}
}

// TestE2EWatchedRunCommitsWhatTheWalkWould: a run whose change set is read
// from the watch commits exactly what the same script makes of a plain
// copy (every kind of change: edits, modes, new and deleted files and
// directories, renames, type changes, symlinks), and so does the same run
// with the watch turned off, which walks instead.
func TestE2EWatchedRunCommitsWhatTheWalkWould(t *testing.T) {
	for _, off := range []bool{false, true} {
		name := "watched"
		var env []string
		if off {
			name, env = "walked", []string{"AIRLOCK_NO_WATCH=1"}
		}
		t.Run(name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, mixedBase)
			before := snapshot(t, x.base, nil)
			want := x.oracle(mixedScript)
			a, m, d := counts(before, want)
			r, j := x.runJSON(env, mixedScript)
			wantCode(t, r, 0)
			if off {
				if j.Measured != "walk" || j.Unwatched != "AIRLOCK_NO_WATCH=1" {
					t.Fatalf("with AIRLOCK_NO_WATCH=1: measured %q (unwatched %q), want a walk saying why", j.Measured, j.Unwatched)
				}
			} else {
				needWatch(t, j)
				if j.Measured != "watch" {
					t.Fatalf("measured %q (unwatched %q), want the watch", j.Measured, j.Unwatched)
				}
			}
			if j.Outcome != "committed" || j.Added != a || j.Modified != m || j.Deleted != d {
				t.Fatalf("run: %+v, want committed +%d ~%d -%d", j, a, m, d)
			}
			wantTree(t, "base after the run vs oracle", want, snapshot(t, x.base, nil))
			// The next run recycles this one's tree: its record of the
			// tree is the patched manifest, which must hold.
			r, j = x.runJSON(env, "printf again >> mod.txt; rm -f added.txt; mkdir -p later/x; echo l > later/x/l")
			wantCode(t, r, 0)
			if j.Outcome != "committed" || j.Added != 1 || j.Modified != 1 || j.Deleted != 1 {
				t.Fatalf("second run: %+v, want committed +1 ~1 -1", j)
			}
		})
	}
}

// TestE2EWatchedRunMakesNoHardLinks: in a watched run a hard link fails as
// one across file systems does (a write through a second name would be
// seen under that name only); with the watch off it is made.
func TestE2EWatchedRunMakesNoHardLinks(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a": F(0o644, "a\n")})
	r, j := x.runJSON(nil, "if ln a b 2>err; then echo linked > how; else cat err > how; fi")
	wantCode(t, r, 0)
	needWatch(t, j)
	if j.Measured != "watch" {
		t.Fatalf("measured %q (unwatched %q), want the watch", j.Measured, j.Unwatched)
	}
	got := snapshot(t, x.base, nil)
	if h := got["how"].Content; !strings.Contains(h, "cross-device") && !strings.Contains(h, "Invalid cross") {
		t.Fatalf("ln in a watched run: %q, want EXDEV", h)
	}
	if _, ok := got["b"]; ok {
		t.Fatal("a watched run made a hard link")
	}
	r, j = x.runJSON([]string{"AIRLOCK_NO_WATCH=1"}, "rm how; ln a b")
	wantCode(t, r, 0)
	if j.Measured != "walk" || j.Added != 1 {
		t.Fatalf("ln with the watch off: %+v, want b added by a walk", j)
	}
}
