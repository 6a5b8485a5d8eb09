package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// recycleShow is the part of `show --json` these tests read.
type recycleShow struct {
	Status   string `json:"status"`
	Recycled *struct {
		From    string `json:"from"`
		Kept    int    `json:"kept"`
		Copied  int    `json:"copied"`
		Removed int    `json:"removed"`
	} `json:"recycled"`
	NotRecycled string `json:"not_recycled"`
	Added       int    `json:"added"`
}

func (x *h) showRecycle(id string) recycleShow {
	x.t.Helper()
	r := x.airlock("show", id, "--json")
	wantCode(x.t, r, 0)
	var s recycleShow
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		x.t.Fatalf("show --json: %v\n%s", err, r.Stdout)
	}
	return s
}

// TestE2ERecycledRun: the second run over a base refreshes the first run's
// tree instead of copying the base again, and its command sees exactly the
// base, with the first run's committed change and nothing else.
func TestE2ERecycledRun(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n"), "sub/g": F(0o644, "g\n"), "sub/h": F(0o755, "h\n"), "link": L("sub/g")})
	backdate(t, x.base, time.Hour)
	r1 := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo new > added.txt; echo mod > f; rm sub/h")
	wantBlock(t, r1, map[string]string{"outcome": "committed", "added": "1", "modified": "1", "deleted": "1"})
	id1 := r1.Settle["tx"]
	// The base moves on between the runs.
	writeFile(t, filepath.Join(x.base, "sub/g"), "g changed in the base\n")
	r2 := x.airlock("run", "--workdir", x.base, "--", "sh", "-c",
		`set -e; [ "$(cat f)" = mod ]; [ "$(cat added.txt)" = new ]; [ ! -e sub/h ]; [ "$(cat link)" = "g changed in the base" ]; [ "$(ls -A | tr '\n' ' ')" = "added.txt f link sub " ]`)
	wantBlock(t, r2, map[string]string{"outcome": "no_changes"})
	s := x.showRecycle(r2.Settle["tx"])
	if s.Recycled == nil || s.Recycled.From != id1 {
		t.Fatalf("second run: recycled = %+v (not_recycled %q), want the tree of %s", s.Recycled, s.NotRecycled, id1)
	}
	if s.Recycled.Copied > 4 {
		t.Errorf("second run copied %d entries; only the ones that changed differ", s.Recycled.Copied)
	}
	text := x.airlock("show", r2.Settle["tx"])
	if !strings.Contains(text.Stdout, "recycled:  the tree of "+id1) {
		t.Errorf("show does not say the tree was recycled:\n%s", text.Stdout)
	}
	// --fresh copies afresh.
	r3 := x.airlock("run", "--fresh", "--workdir", x.base, "--", "true")
	wantBlock(t, r3, map[string]string{"outcome": "no_changes"})
	if s := x.showRecycle(r3.Settle["tx"]); s.Recycled != nil {
		t.Errorf("run --fresh recycled %+v", s.Recycled)
	}
}

// TestE2ERecycleNeverLeaksALeftoverProcess: a process the previous command
// left running (a dev server) must never write into the next transaction,
// however it reaches its old tree: its working directory, the base's path
// inside its own mount namespace, or the old tree's path.
func TestE2ERecycleNeverLeaksALeftoverProcess(t *testing.T) {
	samePath := exec.Command("unshare", "--mount", "true").Run() == nil
	cases := []struct {
		name, script string
		noSamePath   bool
		left         bool // the settle must see it left running, and not pool the tree
		held         bool // the next open must find it holding the tree
	}{
		{name: "working directory in the tree", script: `(sleep 1; echo leak > leak.txt) >/dev/null 2>&1 &`, left: true},
		{name: "base path in its mount namespace", script: `cd /; (sleep 1; echo leak > "$BASE/leak.txt") >/dev/null 2>&1 &`, left: true},
		{name: "old tree path", script: `old=$PWD; cd /; (sleep 1; echo leak > "$old/leak.txt") >/dev/null 2>&1 &`, noSamePath: true, left: true},
		// A leftover that drops the environment airlock marks its
		// command's processes with escapes the settle's look; the next
		// open's look at every process finds it.
		{name: "working directory, environment dropped", script: `env -i /bin/sh -c 'sleep 1; echo leak > leak.txt' >/dev/null 2>&1 & sleep 0.3`, held: true},
		{name: "base path in its mount namespace, environment dropped", script: `cd /; env -i BASE="$BASE" /bin/sh -c 'sleep 1; echo leak > "$BASE/leak.txt"' >/dev/null 2>&1 & sleep 0.3`, held: samePath},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.HasPrefix(c.name, "base path in its mount namespace") && !samePath {
				testbin.Missing(t, "same-path mode needs a mount namespace, and `unshare --mount true` failed here")
			}
			x := newH(t)
			build(t, x.base, tree{"f": F(0o644, "f\n")})
			backdate(t, x.base, time.Hour)
			args := []string{"run", "--workdir", x.base}
			if c.noSamePath {
				args = append(args, "--no-same-path")
			}
			r1 := x.exec(run{env: []string{"BASE=" + x.base}, args: append(args, "--", "sh", "-c", c.script)})
			wantBlock(t, r1, map[string]string{"outcome": "no_changes"})
			// The next transaction lives while the leftover writes.
			r2 := x.airlock(append(args, "--", "sleep", "2")...)
			wantBlock(t, r2, map[string]string{"outcome": "no_changes"})
			if testbin.Exists(filepath.Join(x.base, "leak.txt")) {
				t.Fatalf("the leftover process's write reached the base")
			}
			s := x.showRecycle(r2.Settle["tx"])
			if s.Recycled != nil {
				t.Errorf("the next open recycled the tree a leftover process could write: %+v", s.Recycled)
			}
			if c.held && !strings.Contains(s.NotRecycled, "holds it") {
				t.Errorf("the next open did not see the leftover process: not_recycled %q", s.NotRecycled)
			}
			if first := x.airlock("show", r1.Settle["tx"], "--json"); c.left && !strings.Contains(first.Stdout, "left_running") {
				t.Errorf("the settle did not record the process the command left running:\n%s", first.Stdout)
			}
			// The leftover is done by now; nothing it wrote is in any pooled
			// tree a third run could pick up.
			time.Sleep(500 * time.Millisecond)
			r3 := x.airlock(append(args, "--", "sh", "-c", "test ! -e leak.txt")...)
			wantBlock(t, r3, map[string]string{"outcome": "no_changes"})
			if _, err := os.Stat(filepath.Join(x.base, "leak.txt")); err == nil {
				t.Fatalf("the leftover process's write reached the base")
			}
		})
	}
}

// TestE2EGCTrimsThePool: gc reports what the pool holds, keeps it by
// default, removes it with --drop-pool (a dry run removes nothing), and
// the next run then copies afresh.
func TestE2EGCTrimsThePool(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	backdate(t, x.base, time.Hour)
	r1 := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(t, r1, map[string]string{"outcome": "no_changes"})
	id := r1.Settle["tx"]
	dry := x.airlock("gc", "--dry-run", "--drop-pool")
	wantCode(t, dry, 0)
	if !strings.Contains(dry.Stdout, "would remove the pooled tree of "+id) {
		t.Errorf("gc --dry-run --drop-pool does not report the pooled tree of %s:\n%s", id, dry.Stdout)
	}
	keep := x.airlock("gc")
	wantCode(t, keep, 0)
	if !strings.Contains(keep.Stdout, "kept 1 pooled staged tree") {
		t.Errorf("gc does not say it kept the pooled tree:\n%s", keep.Stdout)
	}
	drop := x.airlock("gc", "--drop-pool")
	wantCode(t, drop, 0)
	if !strings.Contains(drop.Stdout, "removed the pooled tree of "+id) {
		t.Errorf("gc --drop-pool does not report removing the pooled tree:\n%s", drop.Stdout)
	}
	r2 := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(t, r2, map[string]string{"outcome": "no_changes"})
	if s := x.showRecycle(r2.Settle["tx"]); s.Recycled != nil {
		t.Errorf("a run after gc --drop-pool recycled %+v", s.Recycled)
	}
}

// TestE2ERecycleNeverFollowsASwappedStagedDir: a command that puts a
// symlink (to any directory its user can write, or to the base itself) or
// another directory at its staged workspace's path must not make the next
// open "refresh" that directory: nothing outside the state directory is
// written or deleted, and the base is left as it was.
func TestE2ERecycleNeverFollowsASwappedStagedDir(t *testing.T) {
	for _, c := range []struct{ name, target string }{
		{"symlink to another directory", "victim"},
		{"symlink to the base", "base"},
		{"another directory", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"keep/src.c": F(0o644, "int main;\n"), "README": F(0o644, "base\n")})
			backdate(t, x.base, time.Hour)
			victim := testbin.RealDir(t)
			build(t, victim, tree{"thesis/chapter1.tex": F(0o644, "years of work\n"), "id_ed25519": F(0o600, "key\n")})
			target := map[string]string{"victim": victim, "base": x.base}[c.target]
			swap := `s=$AIRLOCK_STATE_DIR/tx/$AIRLOCK_TX; mv "$s/staged" "$s/staged.old" && `
			if target != "" {
				swap += `ln -s "$TARGET" "$s/staged"`
			} else {
				swap += `cp -a "$s/staged.old" "$s/staged"`
			}
			r1 := x.exec(run{env: []string{"TARGET=" + target}, args: []string{"run", "--no-same-path", "--workdir", x.base, "--", "sh", "-c", swap + "; exit 1"}})
			wantCode(t, r1, 1)
			r2 := x.airlock("open", "--workdir", x.base)
			wantCode(t, r2, 0)
			id := strings.TrimSpace(strings.SplitN(r2.Stdout, "\n", 2)[0])
			if s := x.showRecycle(id); s.Recycled != nil {
				t.Errorf("the next open recycled what the command put at its staged path: %+v", s.Recycled)
			}
			if got := testbin.ReadFile(t, filepath.Join(victim, "thesis/chapter1.tex")); got != "years of work\n" {
				t.Errorf("a directory outside the state was written: chapter1.tex = %q", got)
			}
			if !testbin.Exists(filepath.Join(victim, "id_ed25519")) {
				t.Errorf("a directory outside the state lost a file")
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "keep/src.c")); got != "int main;\n" {
				t.Errorf("the base was written: keep/src.c = %q", got)
			}
		})
	}
}
