//go:build airlock_known_breaks && linux

package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The attacks of e2e_attack7_test.go that break a guarantee of the run
// tool today; each fails, and is compiled only with airlock_known_breaks
// (go test -tags 'airlock_faults airlock_known_breaks' -run KnownBreakAttack7 ./cmd/airlock).

// TestKnownBreakAttack7TimeoutOfSIGTERMIgnorerIsAToolError: a command
// that itself ignores SIGTERM is killed at its timeout (after the grace),
// but run answers with a tool error ("its exit could not be observed:
// signal: killed") instead of a timed_out result: the output the command
// wrote before is lost, and the model is told nothing of the timeout.
// (Exec returns a result for a timeout only when ExitCode >= 0.)
func TestKnownBreakAttack7TimeoutOfSIGTERMIgnorerIsAToolError(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	s := x.serveMCP()
	id, _ := s.open(nil)
	r := s.call("run", map[string]any{"id": id, "command": `trap "" TERM; echo armed; while :; do sleep 0.05; done`, "timeout_seconds": 1})
	if r.isErr || r.out["timed_out"] != true || !strings.Contains(r.text, "armed") {
		t.Errorf("a command ignoring SIGTERM past its 1 s timeout: tool error %v, %v %q; want a timed_out result with its output", r.isErr, r.out, r.text)
	}
}

// TestKnownBreakAttack7RunDirSymlinkLeavesTree: dir is "relative to the
// tree's root", and Exec refuses .. and absolute paths, but a dir that is
// a symlink in the staged tree to a directory outside it is followed: the
// command starts (and writes) outside the tree, and run's dir names
// <root>/link as if it were inside.
func TestKnownBreakAttack7RunDirSymlinkLeavesTree(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	outside := testbin.RealDir(t)
	s := x.serveMCP()
	id, staged := s.open(nil)
	must(t, os.Symlink(outside, filepath.Join(staged, "link")))
	r := s.call("run", map[string]any{"id": id, "command": "pwd -P; echo x > written.txt", "dir": "link"})
	if testbin.Exists(filepath.Join(outside, "written.txt")) {
		t.Errorf("dir %q (a symlink to %s) started the command outside the staged tree: %v %q", "link", outside, r.out, r.text)
	}
}

// TestKnownBreakAttack7CommitElsewhereDuringRun: the run tool keeps a
// commit of its transaction out only within its own server process. A
// commit from the command line, or from a second `airlock mcp` on the
// same state root, while a run is in flight settles the transaction under
// it: the command's later write (through a descriptor it holds) goes to
// a settled tree, and run reports exit 0 in what the model believes is an
// open transaction. The write is lost, and nothing says so.
func TestKnownBreakAttack7CommitElsewhereDuringRun(t *testing.T) {
	for _, by := range []string{"cli", "second-mcp"} {
		t.Run(by, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
			out := testbin.RealDir(t)
			gate, started := filepath.Join(out, "gate"), filepath.Join(out, "started")
			must(t, syscall.Mkfifo(gate, 0o600))
			s := x.serveMCP()
			id, _ := s.open(nil)
			done := make(chan toolResult, 1)
			go func() {
				r, err := s.callErr("run", map[string]any{"id": id, "command": "exec 3>>one.txt; echo one >&3; : > " + started + "; read x < " + gate + "; echo more >&3"})
				if err != nil {
					r = toolResult{isErr: true, text: err.Error()}
				}
				done <- r
			}()
			waitFile(t, started)
			committed := false
			switch by {
			case "cli":
				c := x.airlock("commit", id)
				committed = c.Code == 0 && c.Settle != nil && c.Settle["outcome"] == "committed"
			case "second-mcp":
				c := x.serveMCP().call("commit", map[string]any{"id": id})
				committed = !c.isErr && c.out["outcome"] == "committed"
			}
			must(t, os.WriteFile(gate, []byte("go\n"), 0))
			r := <-done
			if got := testbin.ReadFile(t, filepath.Join(x.base, "one.txt")); committed && got != "one\n" {
				t.Errorf("the base's one.txt is %q, not the checked %q", got, "one\n")
			}
			if committed && !r.isErr && r.exitCode() == 0 && !strings.Contains(r.text, "committed") {
				t.Errorf("a commit (%s) settled the transaction while run was in flight; the command's later write was lost and run said exit 0: %v %q", by, r.out, r.text)
			}
		})
	}
}

// TestKnownBreakAttack7RunDuringCommitLost: a run of a transaction whose
// commit (from the command line) is past its checks is not refused: it
// runs, writes the tree and returns exit 0, and the commit then lands the
// change set it had checked. The base is right, but the run's writes are
// lost without a word to the model, which was told it ran in an open
// transaction.
func TestKnownBreakAttack7RunDuringCommitLost(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	pause := testbin.RealDir(t)
	s := x.serveMCP()
	id, staged := s.open(nil)
	writeFile(t, filepath.Join(staged, "one.txt"), "one\n")
	c := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", id}})
	waitFile(t, filepath.Join(pause, "reached"))
	r := s.call("run", map[string]any{"id": id, "command": "echo late > late.txt"})
	must(t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o600))
	res := c.WaitSettled()
	landed := testbin.Exists(filepath.Join(x.base, "late.txt"))
	if !r.isErr && r.exitCode() == 0 && res.Settle != nil && res.Settle["outcome"] == "committed" && !landed {
		t.Errorf("run during a commit past its checks: exit 0, then the commit landed without its write: %v %q", r.out, r.text)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "one.txt")); got != "one\n" {
		t.Errorf("the base's one.txt is %q, not the checked %q", got, "one\n")
	}
}
