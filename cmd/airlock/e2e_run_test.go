package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// samePathScript checks where it runs, writes through the base's absolute
// path, and waits for the test to look at the real base.
const samePathScript = `set -e
[ "$(pwd)" = "$WANT_PWD" ] || { echo "pwd is $(pwd), want $WANT_PWD" >&2; exit 10; }
[ "$(pwd -P)" = "$WANT_PWD" ] || { echo "pwd -P is $(pwd -P), want $WANT_PWD" >&2; exit 11; }
printf 'written via the absolute path\n' > "$BASE/abs.txt"
: > "$SYNC/ready"
while [ ! -e "$SYNC/go" ]; do sleep 0.01; done
`

// TestE2ESamePath: on Linux the command sees the staged tree at the base's
// own path; writes through that path land in the staged tree until the
// commit.
func TestE2ESamePath(t *testing.T) {
	if err := exec.Command("unshare", "--mount", "true").Run(); err != nil {
		testbin.Missing(t, "same-path mode needs a mount namespace, and `unshare --mount true` failed here: %v", err)
	}
	for _, sub := range []string{"", "sub"} {
		t.Run("start in base/"+sub, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"sub/f": F(0o644, "f\n")})
			sync := testbin.RealDir(t)
			wantPwd := filepath.Join(x.base, sub)
			p := x.start(run{
				dir:  wantPwd,
				env:  []string{"SYNC=" + sync, "BASE=" + x.base, "WANT_PWD=" + wantPwd},
				args: []string{"run", "--workdir", x.base, "--", "sh", "-c", samePathScript},
			})
			waitFile(t, filepath.Join(sync, "ready"))
			if testbin.Exists(filepath.Join(x.base, "abs.txt")) {
				t.Errorf("a write through the base's absolute path reached the real base before the commit")
			}
			touch(t, filepath.Join(sync, "go"))
			r := p.WaitSettled()
			wantCode(t, r, 0)
			if strings.Contains(r.Stderr, "same-path mode unavailable") {
				t.Errorf("same-path mode fell back although unshare works:\n%s", r.Stderr)
			}
			wantBlock(t, r, map[string]string{"outcome": "committed", "added": "1"})
			if got := testbin.ReadFile(t, filepath.Join(x.base, "abs.txt")); got != "written via the absolute path\n" {
				t.Errorf("abs.txt = %q after the commit", got)
			}
		})
	}

	t.Run("--no-same-path", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{"f": F(0o644, "f\n")})
		r := x.exec(run{
			env:  []string{"BASE=" + x.base},
			args: []string{"run", "--workdir", x.base, "--no-same-path", "--id", "nsp", "--", "sh", "-c", `pwd -P; [ "$(pwd -P)" != "$BASE" ] && printf 'x\n' > rel.txt`},
		})
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "committed", "added": "1"})
		if got, want := strings.TrimSpace(r.Stdout), x.stagedPath("nsp"); got != want {
			t.Errorf("--no-same-path ran in %q, want the staged path %q", got, want)
		}
	})
}

// TestE2EExitCodes: a command killed by a signal maps to 128+N; airlock's
// own failures to 125 with a one-line message, before anything runs or is
// written. (126 and 127 are pinned by testdata/script/run.txtar.)
func TestE2EExitCodes(t *testing.T) {
	t.Run("killed by a signal", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{"f": F(0o644, "f\n")})
		before := snapshot(t, x.base, nil)
		r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", `printf 'changed\n' > f; kill -KILL $$`)
		wantCode(t, r, 137)
		wantBlock(t, r, map[string]string{"outcome": "discarded"})
		wantTree(t, "base after a killed command", before, snapshot(t, x.base, nil))
	})

	// Each case runs a command that would leave a mark; none may run.
	type tc struct {
		name  string
		setup func(x *h) (args []string, words []string)
	}
	cases := []tc{
		{"bad flag", func(x *h) ([]string, []string) {
			return []string{"run", "--workdir", x.base, "--bogus"}, []string{"--bogus"}
		}},
		{"backend unknown", func(x *h) ([]string, []string) {
			return []string{"run", "--workdir", x.base, "--backend", "nope"}, []string{"nope"}
		}},
		{"base not a directory", func(x *h) ([]string, []string) {
			f := filepath.Join(x.base, "file")
			writeFile(x.t, f, "f\n")
			return []string{"run", "--workdir", f}, []string{f}
		}},
		{"base missing", func(x *h) ([]string, []string) {
			m := filepath.Join(x.base, "missing")
			return []string{"run", "--workdir", m}, []string{m}
		}},
		{"base is /", func(x *h) ([]string, []string) {
			return []string{"run", "--workdir", "/"}, []string{"base /"}
		}},
		{"base is home", func(x *h) ([]string, []string) {
			x.home = x.base
			return []string{"run", "--workdir", x.base}, []string{x.base, "home"}
		}},
		{"state dir inside the base", func(x *h) ([]string, []string) {
			x.state = filepath.Join(x.base, "state")
			return []string{"run", "--workdir", x.base}, []string{x.base, x.state}
		}},
		{"base inside the state dir", func(x *h) ([]string, []string) {
			x.state = filepath.Dir(x.base)
			return []string{"run", "--workdir", x.base}, []string{x.base, x.state}
		}},
		{"invalid id", func(x *h) ([]string, []string) {
			return []string{"run", "--workdir", x.base, "--id", "a b"}, []string{"a b"}
		}},
		{"id already used", func(x *h) ([]string, []string) {
			r := x.airlock("open", "--workdir", x.base, "--id", "dup")
			wantCode(x.t, r, 0)
			return []string{"run", "--workdir", x.base, "--id", "dup"}, []string{"dup"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"f": F(0o644, "f\n")})
			args, words := c.setup(x)
			before := snapshot(t, x.base, nil)
			mark := filepath.Join(testbin.RealDir(t), "ran")
			r := x.exec(run{env: []string{"MARK=" + mark}, args: append(args, "--", "sh", "-c", `: > "$MARK"; printf 'x\n' > new.txt`)})
			wantCode(t, r, 125)
			oneLine(t, r, words...)
			if r.Settle != nil {
				t.Errorf("a settle block was printed for a transaction that never opened")
			}
			if testbin.Exists(mark) {
				t.Errorf("the command ran although airlock failed")
			}
			wantTree(t, "base after airlock failed", before, snapshot(t, x.base, nil))
			if c.name == "id already used" {
				// The first transaction is intact.
				r := x.airlock("commit", "dup")
				wantCode(t, r, 0)
				wantBlock(t, r, map[string]string{"tx": "dup", "outcome": "no_changes"})
			}
		})
	}

	t.Run("--validate", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{"f": F(0o644, "f\n")})
		before := snapshot(t, x.base, nil)
		r := x.airlock("run", "--workdir", x.base, "--validate", "grep -q agent f && exit 7", "--", "sh", "-c", `printf 'agent\n' > f`)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ValidationFailed"})
		wantTree(t, "base after a failed validation", before, snapshot(t, x.base, nil))
		r = x.airlock("run", "--workdir", x.base, "--validate", "grep -q agent f", "--", "sh", "-c", `printf 'agent\n' > f`)
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1"})
	})
}

// TestE2EEnv: the command sees its transaction id and a port range no
// other open transaction holds.
func TestE2EEnv(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	type opened struct {
		ID       string `json:"id"`
		Path     string `json:"path"`
		PortBase int    `json:"port_base"`
	}
	var open []opened
	for range 2 {
		r := x.airlock("open", "--workdir", x.base, "--json")
		wantCode(t, r, 0)
		var o opened
		if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
			t.Fatalf("open --json: %v\n%s", err, r)
		}
		open = append(open, o)
	}
	r := x.airlock("run", "--workdir", x.base, "--id", "envtx", "--", "sh", "-c", `echo "$AIRLOCK_TX $AIRLOCK_PORT_BASE"`)
	wantCode(t, r, 0)
	id, port, _ := strings.Cut(strings.TrimSpace(r.Stdout), " ")
	if id != "envtx" {
		t.Errorf("AIRLOCK_TX = %q, want envtx", id)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 20000 {
		t.Errorf("AIRLOCK_PORT_BASE = %q, want a number >= 20000", port)
	}
	ports := map[int]bool{p: true}
	for _, o := range open {
		if o.PortBase < 20000 {
			t.Errorf("open %s: port_base %d < 20000", o.ID, o.PortBase)
		}
		for q := range ports {
			if o.PortBase < q+10 && q < o.PortBase+10 {
				t.Errorf("port ranges overlap: %d and %d (open: %+v, run: %d)", o.PortBase, q, open, p)
			}
		}
		ports[o.PortBase] = true
	}
	if open[0].ID == open[1].ID {
		t.Errorf("two opens got the same id %s", open[0].ID)
	}
	for _, o := range open {
		if st, err := os.Stat(o.Path); err != nil || !st.IsDir() {
			t.Errorf("open %s: staged path %s is not a directory", o.ID, o.Path)
		}
	}
}

// The command says it is ready only once its child runs sleep: a signal
// that reaches a shell's child between its fork and its exec is taken by
// the shell's own trap, copied into the child, and lost — a race of the
// shell, not of airlock.
//
// TestE2ESignalReachesTheCommandAtOnce: SIGTERM sent to airlock reaches
// the command's whole process group at once, not only the command's own
// process: the shell's background child, which would sleep for an hour,
// dies with it, so the run settles by the command's exit code (its TERM
// trap) instead of when the child would have finished on its own. The
// child's end is what decides, not how soon airlock ended: a clock would
// say as much about the machine's load as about the signal.
func TestE2ESignalReachesTheCommandAtOnce(t *testing.T) {
	for _, mode := range [][]string{nil, {"--no-same-path"}} {
		t.Run(strings.Join(append([]string{"run"}, mode...), " "), func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"f": F(0o644, "f\n")})
			before := snapshot(t, x.base, nil)
			sync := testbin.RealDir(t)
			// An hour, and a duration no other process on the machine
			// sleeps for, by which the test finds the child.
			nap := fmt.Sprintf("3600.%09d", time.Now().UnixNano()%1e9)
			args := append(append([]string{"run", "--workdir", x.base}, mode...),
				"--", "sh", "-c", `trap "exit 7" TERM; printf 'changed\n' > f; sleep `+nap+` & p=$!; while [ "$(cat /proc/$p/comm 2>/dev/null)" != sleep ]; do :; done; : > "$SYNC/ready"; wait`)
			p := x.start(run{env: []string{"SYNC=" + sync}, args: args, newSession: true})
			waitFile(t, filepath.Join(sync, "ready"))
			child := procByArgv(t, "sleep", nap)
			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			r := p.WaitSettled()
			if !ended(t, child, time.Minute) {
				t.Errorf("the command's background child (sleep %s) outlived the SIGTERM sent to airlock by a minute: the signal did not reach the command's process group", nap)
			}
			wantCode(t, r, 7)
			wantBlock(t, r, map[string]string{"outcome": "discarded", "modified": "1"})
			wantTree(t, "base after a signalled command", before, snapshot(t, x.base, nil))
		})
	}
}
