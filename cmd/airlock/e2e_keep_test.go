package main_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// agentGit is the command that runs git in a directory, with an identity
// (as an agent has one), trimmed of the final newline.
func agentGit(t *testing.T, x *h) func(dir string, args ...string) string {
	return func(dir string, args ...string) string {
		t.Helper()
		return strings.TrimSpace(x.sh(dir, nil, "git", append([]string{"-c", "user.name=agent", "-c", "user.email=agent@example.invalid"}, args...)...))
	}
}

// gitRepoBase makes x.base a git repository with one commit and returns
// the command that runs git in a directory (with an identity, as an agent
// has one).
func gitRepoBase(t *testing.T, x *h, files tree) func(dir string, args ...string) string {
	t.Helper()
	testbin.Require(t, "git", "the base is a git repository whose commits are compared")
	g := agentGit(t, x)
	build(t, x.base, files)
	g(x.base, "init", "-q", "-b", "main")
	g(x.base, "add", "-A")
	g(x.base, "commit", "-q", "-m", "initial")
	return g
}

// TestE2ECopyCommitsAreKept: an agent that runs `git commit` in a copy
// transaction's staged tree (Claude Code and aider do, by habit) commits
// into the staged copy of .git, which is never applied. Its commits are
// kept as the worktree backend keeps its own: fetched into the base's
// repository as branch airlock/<id> — objects and that one ref, the base's
// HEAD, index and other refs untouched — at a commit and at a discard,
// unless the discard is told --drop-commits; the settle block, the
// receipt, `show` and the JSON say so.
func TestE2ECopyCommitsAreKept(t *testing.T) {
	x := newH(t)
	g := gitRepoBase(t, x, tree{"a.txt": F(0o644, "a\n")})
	head := g(x.base, "rev-parse", "HEAD")
	refsBefore := g(x.base, "for-each-ref", "--format=%(refname) %(objectname)")
	// Each transaction's commit differs (its message names it): the same
	// commit made twice within a second is one object, already on the
	// first branch, and nothing new to keep.
	agentCommit := func(id string) string {
		return "echo b > b.txt && git add b.txt && git -c user.name=agent -c user.email=agent@example.invalid commit -qm 'agent: add b in " + id + "' && echo c > c.txt"
	}

	t.Run("commit", func(t *testing.T) {
		r := x.airlock("run", "--backend", "copy", "--workdir", x.base, "--id", "kept", "--", "sh", "-c", agentCommit("kept"))
		wantCode(t, r, 0)
		kept := g(x.base, "rev-parse", "refs/heads/airlock/kept")
		wantBlock(t, r, map[string]string{"outcome": "committed", "added": "2", "branch": "airlock/kept", "branch_head": kept})
		if !strings.Contains(r.Stderr, "airlock: kept branch airlock/kept at "+kept+": it holds commits no other ref contains\n") {
			t.Errorf("the settle does not say the branch was kept, in the worktree backend's words\n%s", r)
		}
		if got := g(x.base, "log", "-1", "--format=%s", "airlock/kept"); got != "agent: add b in kept" {
			t.Errorf("airlock/kept's commit is %q, want the agent's", got)
		}
		if g(x.base, "rev-parse", "airlock/kept^") != head {
			t.Error("the kept commit's parent is not the base's HEAD it was made on")
		}
		// The base's HEAD, index and other refs are as they were; the
		// files landed through the change set, the commit did not.
		if g(x.base, "rev-parse", "HEAD") != head || g(x.base, "symbolic-ref", "HEAD") != "refs/heads/main" {
			t.Error("the base's HEAD moved")
		}
		if got := g(x.base, "diff", "--cached", "--name-only"); got != "" {
			t.Errorf("the base's index changed: %q staged", got)
		}
		refs := g(x.base, "for-each-ref", "--format=%(refname) %(objectname)")
		if want := refsBefore + "\nrefs/heads/airlock/kept " + kept; refs != strings.Join(sortedLines(want), "\n") {
			t.Errorf("refs after the commit:\n%s\nwant:\n%s", refs, want)
		}
		if got := g(x.base, "status", "--porcelain"); got != "?? b.txt\n?? c.txt" && got != "?? b.txt\n?? c.txt\n" {
			t.Errorf("git status in the base: %q, want b.txt and c.txt untracked", got)
		}
		var show struct {
			Branch     string `json:"branch"`
			BranchHead string `json:"branch_head"`
			BranchKept bool   `json:"branch_kept"`
		}
		sr := x.airlock("show", "kept", "--json")
		wantCode(t, sr, 0)
		must(t, json.Unmarshal([]byte(sr.Stdout), &show))
		if show.Branch != "airlock/kept" || show.BranchHead != kept || !show.BranchKept {
			t.Errorf("show --json: %+v", show)
		}
		rc := x.receipt("kept")
		if rc["branch"] != "airlock/kept" || rc["branch_head"] != kept {
			t.Errorf("the receipt does not name the branch: %v", rc)
		}
		wantCode(t, x.airlock("receipt", "verify", "kept"), 0)
	})

	t.Run("discard keeps them", func(t *testing.T) {
		staged := x.openTx("dropped", "--backend", "copy")
		x.sh(staged, nil, "sh", "-c", agentCommit("dropped"))
		r := x.airlock("discard", "dropped")
		wantCode(t, r, 0)
		kept := g(x.base, "rev-parse", "refs/heads/airlock/dropped")
		wantBlock(t, r, map[string]string{"outcome": "discarded", "branch": "airlock/dropped", "branch_head": kept})
		if g(x.base, "log", "-1", "--format=%s", kept) != "agent: add b in dropped" {
			t.Error("the discarded transaction's commit is not on its branch")
		}
	})

	t.Run("discard --drop-commits lets them go", func(t *testing.T) {
		staged := x.openTx("gone", "--backend", "copy")
		x.sh(staged, nil, "sh", "-c", agentCommit("gone"))
		r := x.airlock("discard", "gone", "--drop-commits")
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "discarded", "branch": "", "branch_head": ""})
		if err := exec.Command("git", "-C", x.base, "rev-parse", "--verify", "-q", "refs/heads/airlock/gone").Run(); err == nil {
			t.Error("discard --drop-commits kept a branch")
		}
	})

	t.Run("no commit, no branch", func(t *testing.T) {
		r := x.airlock("run", "--backend", "copy", "--workdir", x.base, "--id", "plain", "--", "sh", "-c", "echo d > d.txt")
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "committed", "branch": "", "branch_head": ""})
		if strings.Contains(g(x.base, "branch", "--list", "airlock/plain"), "plain") {
			t.Error("a transaction that made no commit left a branch")
		}
	})
}

func sortedLines(s string) []string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return l
}

// receipt reads transaction id's receipt as a JSON object.
func (x *h) receipt(id string) map[string]any {
	x.t.Helper()
	r := x.airlock("show", id, "--json")
	wantCode(x.t, r, 0)
	var in struct {
		Receipt string `json:"receipt"`
	}
	must(x.t, json.Unmarshal([]byte(r.Stdout), &in))
	var rc map[string]any
	must(x.t, json.Unmarshal([]byte(testbin.ReadFile(x.t, in.Receipt)), &rc))
	return rc
}

// TestE2EMergedPathsAreNamed: a commit that three-way merged a path the
// base had changed too names it in the settle block, the JSON result and
// the receipt.
func TestE2EMergedPathsAreNamed(t *testing.T) {
	x := newH(t)
	gitRepoBase(t, x, tree{"notes.txt": F(0o644, "one\ntwo\nthree\nfour\nfive\n"), "other.txt": F(0o644, "x\n")})
	staged := x.openTx("m", "--backend", "copy")
	writeFile(t, filepath.Join(staged, "notes.txt"), "ONE\ntwo\nthree\nfour\nfive\n")
	writeFile(t, filepath.Join(staged, "other.txt"), "y\n")
	// A person edits another part of the same file in the base meanwhile.
	writeFile(t, filepath.Join(x.base, "notes.txt"), "one\ntwo\nthree\nfour\nFIVE\n")
	r := x.airlock("commit", "m", "--json")
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "2", "merged_paths": "notes.txt"})
	var res struct {
		Merged  []string       `json:"merged"`
		Receipt map[string]any `json:"receipt"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &res))
	if !slices.Equal(res.Merged, []string{"notes.txt"}) {
		t.Errorf("commit --json merged = %q, want [notes.txt]", res.Merged)
	}
	if m, _ := res.Receipt["merged"].([]any); len(m) != 1 || m[0] != "notes.txt" {
		t.Errorf("the receipt's merged = %v, want [notes.txt]", res.Receipt["merged"])
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "notes.txt")); got != "ONE\ntwo\nthree\nfour\nFIVE\n" {
		t.Errorf("merged notes.txt = %q", got)
	}
	wantCode(t, x.airlock("receipt", "verify", "m"), 0)
}

// TestE2EGCRemovesAbandoned: an open transaction whose owner is gone (as
// every headless `claude -p --worktree` run leaves one) goes with a plain
// gc when it holds no changes and nobody works in it; one with changes,
// or with a process in its staged workspace, is kept.
func TestE2EGCRemovesAbandoned(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	idle := x.openTx("idle")
	worked := x.openTx("worked")
	writeFile(t, filepath.Join(worked, "new.txt"), "work\n")
	busy := x.openTx("busy")
	sleeper := exec.Command("sleep", "3600") // killed at cleanup
	sleeper.Dir = busy
	must(t, sleeper.Start())
	t.Cleanup(func() { sleeper.Process.Signal(syscall.SIGKILL); sleeper.Wait() })

	r := x.airlock("gc")
	wantCode(t, r, 0)
	if !strings.Contains(r.Stdout, "removed idle (open, owner gone, no changes: abandoned") {
		t.Errorf("gc did not remove the abandoned transaction\n%s", r)
	}
	if testbin.Exists(idle) {
		t.Error("the abandoned transaction's staged tree is still there")
	}
	if !strings.Contains(r.Stdout, "kept worked (kept: open, owner gone, with changes (1 added, 0 modified, 0 deleted)") {
		t.Errorf("gc does not keep the transaction with changes, saying why\n%s", r)
	}
	if !strings.Contains(r.Stdout, "kept busy (kept: open; commit or discard it, or name it to gc (process ") {
		t.Errorf("gc does not keep the transaction a process works in, naming it\n%s", r)
	}
	if !testbin.Exists(filepath.Join(worked, "new.txt")) || !testbin.Exists(busy) {
		t.Error("gc removed a kept transaction's staged tree")
	}
}

// TestE2EKeepCommitsReadsOnlyTheStagedRepository: a staged .git that would
// make git block (a FIFO where it reads) or read another repository (a
// commondir the base's has not) is not read at all: the settle finishes,
// with the change applied, and says the commits were not kept; nothing of
// the other repository reaches the base's.
func TestE2EKeepCommitsReadsOnlyTheStagedRepository(t *testing.T) {
	for name, plant := range map[string]string{
		"fifo":      `rm -f .git/packed-refs && mkfifo .git/packed-refs`,
		"commondir": `printf '%s\n' "$OTHER/.git" > .git/commondir`,
	} {
		t.Run(name, func(t *testing.T) {
			x := newH(t)
			g := gitRepoBase(t, x, tree{"f": F(0o644, "f\n")})
			other := testbin.RealDir(t)
			testbin.WriteFiles(t, other, map[string]string{"s": "TOPSECRET\n"})
			g(other, "init", "-q", "-b", "main")
			g(other, "add", "-A")
			g(other, "commit", "-q", "-m", "secret")
			r := x.exec(run{env: []string{"OTHER=" + other}, args: []string{"run", "--backend", "copy", "--workdir", x.base, "--", "sh", "-c", plant + " && echo changed > f"}})
			wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1"})
			if !strings.Contains(r.Stderr, "were not kept") {
				t.Errorf("the settle does not say the commits were not kept\n%s", r)
			}
			if refs := g(x.base, "for-each-ref", "refs/heads/airlock/"); refs != "" {
				t.Errorf("a branch was kept from a repository airlock should not read: %q", refs)
			}
		})
	}
}
