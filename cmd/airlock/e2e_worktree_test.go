package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// gitBase skips without git and makes x.base a repository whose working
// tree differs from HEAD in every way: a modified, a deleted and a
// mode-changed tracked file, a change staged in the index and edited
// again, untracked files, ignored ones (.env, node_modules/), symlinks and
// an empty directory. It returns the command that runs git in a directory.
func gitBase(t *testing.T, x *h) func(dir string, args ...string) string {
	t.Helper()
	testbin.Require(t, "git", "the worktree backend runs it")
	g := func(dir string, args ...string) string {
		t.Helper()
		return x.sh(dir, nil, "git", args...)
	}
	build(t, x.base, tree{
		"a.txt": F(0o644, "a\n"), "b.txt": F(0o644, "b\n"), "run.sh": F(0o755, "#!/bin/sh\n"),
		"src/main.go": F(0o644, "package main\n"), "src/util.go": F(0o644, "package main\n// util\n"),
		".gitignore": F(0o644, ".env\nnode_modules/\n*.log\n"), "lnk": L("a.txt"),
	})
	g(x.base, "init", "-q", "-b", "main")
	g(x.base, "add", "-A")
	g(x.base, "commit", "-q", "-m", "initial")
	must(t, os.Remove(filepath.Join(x.base, "b.txt")))
	must(t, os.Chmod(filepath.Join(x.base, "run.sh"), 0o644))
	build(t, x.base, tree{
		"src/util.go": F(0o644, "package main\n// util, staged\n"),
	})
	g(x.base, "add", "src/util.go")
	build(t, x.base, tree{
		"a.txt": F(0o644, "a\nmodified\n"), "src/util.go": F(0o644, "package main\n// util, staged\n// and edited again\n"),
		"notes.txt": F(0o600, "untracked\n"), "src/new.go": F(0o640, "package main\n// new\n"),
		".env": F(0o600, "SECRET=1\n"), "node_modules/x/index.js": F(0o644, "module.exports = 1\n"),
		"build.log": F(0o644, "log\n"), "src/up": L("../a.txt"), "empty": D(0o750),
	})
	return g
}

func isGit(rel string) bool { return rel == ".git" || strings.HasPrefix(rel, ".git/") }

// showJSON is `airlock show ID --json`.
func showJSON(t *testing.T, x *h, id string) map[string]any {
	t.Helper()
	r := x.airlock("show", id, "--json")
	wantCode(t, r, 0)
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &m); err != nil {
		t.Fatalf("show --json: %v\n%s", err, r.Stdout)
	}
	return m
}

// worktrees is what `git worktree list --porcelain` names.
func worktrees(g func(string, ...string) string, dir string) []string {
	var out []string
	for _, l := range strings.Split(g(dir, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			out = append(out, p)
		}
	}
	return out
}

// TestE2EWorktreeStagesWorkingTree: the staged tree is the base's working
// tree byte for byte (tracked, untracked and ignored files, modes,
// symlinks), git in it reports what git in the base reports, and the
// worktree is on branch airlock/<id> at the base's HEAD. Discarding it
// leaves no registration and no branch.
func TestE2EWorktreeStagesWorkingTree(t *testing.T) {
	for _, sub := range []string{"", "src"} {
		t.Run("base="+map[string]string{"": "top", "src": "subdirectory"}[sub], func(t *testing.T) {
			x := newH(t)
			g := gitBase(t, x)
			repo := x.base
			base := filepath.Join(repo, sub)
			before := snapshot(t, base, isGit)
			status := g(base, "status", "--porcelain", "--ignored", "--", ".")
			if !strings.Contains(status, "MM src/util.go") {
				t.Fatalf("the base's status lacks the staged change:\n%s", status)
			}
			r := x.airlock("open", "--workdir", base, "--backend", "worktree", "--id", "wt")
			wantCode(t, r, 0)
			staged := strings.Split(r.Stdout, "\n")[1]

			wantTree(t, "staged tree", before, snapshot(t, staged+"/.", isGit))
			for _, args := range [][]string{
				{"status", "--porcelain", "--", "."},
				{"status", "--porcelain", "--ignored", "--", "."},
				{"diff", "--stat", "--", "."},
				{"diff", "--cached", "--stat", "--", "."},
			} {
				if got, want := g(staged, args...), g(base, args...); got != want {
					t.Errorf("git %s in the staged tree:\n%s\nin the base:\n%s", strings.Join(args, " "), got, want)
				}
			}
			head := strings.TrimSpace(g(repo, "rev-parse", "HEAD"))
			if got := strings.TrimSpace(g(staged, "rev-parse", "--abbrev-ref", "HEAD")); got != "airlock/wt" {
				t.Errorf("the staged worktree is on %q, want airlock/wt", got)
			}
			m := showJSON(t, x, "wt")
			if m["backend"] != "worktree" || m["branch"] != "airlock/wt" || m["branch_head"] != head || m["git_meta"] != 0.0 {
				t.Errorf("show: backend %v, branch %v at %v, git_meta %v; want worktree, airlock/wt at %s, 0", m["backend"], m["branch"], m["branch_head"], m["git_meta"], head)
			}
			if r := x.airlock("show", "wt"); !strings.Contains(r.Stdout, "branch:    airlock/wt at "+head+"\n") {
				t.Errorf("show does not name the branch:\n%s", r.Stdout)
			}
			if r := x.airlock("diff", "wt", "--name-status"); r.Stdout != "" {
				t.Errorf("a fresh worktree has changes:\n%s", r.Stdout)
			}

			r = x.airlock("discard", "wt")
			wantCode(t, r, 0)
			if strings.Contains(r.Stderr, "kept branch") {
				t.Errorf("discard kept a branch that holds nothing:\n%s", r.Stderr)
			}
			if got := worktrees(g, repo); len(got) != 1 || got[0] != repo {
				t.Errorf("worktrees after discard: %q", got)
			}
			if got := g(repo, "branch", "--list", "airlock/*"); got != "" {
				t.Errorf("branches after discard: %q", got)
			}
			if testbin.Exists(staged) {
				t.Errorf("staged tree %s still there", staged)
			}
			wantTree(t, "base after discard", before, snapshot(t, base, isGit))
		})
	}
}

// TestE2EWorktreeAgentCommit: the command's git commit stays on
// airlock/<id> after the transaction settles, committed or discarded, and
// the settle says so; the commit's file changes reach the base through the
// normal pipeline, never the base's repository.
func TestE2EWorktreeAgentCommit(t *testing.T) {
	tests := []struct {
		name    string
		exit    int
		outcome string
	}{
		{"committed", 0, "committed"},
		{"discarded", 3, "discarded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := newH(t)
			g := gitBase(t, x)
			head := strings.TrimSpace(g(x.base, "rev-parse", "HEAD"))
			refs := g(x.base, "for-each-ref", "--format=%(refname)")
			before := snapshot(t, x.base, isGit)
			r := x.exec(run{dir: x.base, args: []string{"run", "--backend", "worktree", "--id", "ag", "--", "sh", "-c",
				fmt.Sprintf(`set -e; printf 'agent\n' >> a.txt; printf 'new\n' > added.txt; git add a.txt added.txt; git commit -q -m 'from the agent'; git rev-parse HEAD > "$HOME/sha"; exit %d`, tt.exit)}})
			wantCode(t, r, tt.exit)
			wantBlock(t, r, map[string]string{"outcome": tt.outcome, "added": "1", "modified": "1", "deleted": "0"})
			sha := strings.TrimSpace(testbin.ReadFile(t, filepath.Join(x.home, "sha")))
			if !strings.Contains(r.Stderr, "airlock: kept branch airlock/ag at "+sha) {
				t.Errorf("the settle does not say it kept airlock/ag at %s:\n%s", sha, r.Stderr)
			}
			if got := strings.TrimSpace(g(x.base, "rev-parse", "airlock/ag")); got != sha {
				t.Errorf("airlock/ag at %s, want the agent's commit %s", got, sha)
			}
			if got := strings.TrimSpace(g(x.base, "rev-parse", "airlock/ag^")); got != head {
				t.Errorf("the agent's commit has parent %s, want the base's HEAD %s", got, head)
			}
			if got := strings.TrimSpace(g(x.base, "rev-parse", "HEAD")); got != head {
				t.Errorf("the base's HEAD moved to %s", got)
			}
			if got := g(x.base, "for-each-ref", "--format=%(refname)"); got != "refs/heads/airlock/ag\n"+refs {
				t.Errorf("refs after the settle:\n%s\nwant airlock/ag and the earlier ones:\n%s", got, refs)
			}
			if got := worktrees(g, x.base); len(got) != 1 {
				t.Errorf("worktrees after the settle: %q", got)
			}
			m := showJSON(t, x, "ag")
			if m["branch"] != "airlock/ag" || m["branch_head"] != sha || m["branch_kept"] != true {
				t.Errorf("show: branch %v at %v kept %v, want airlock/ag at %s kept", m["branch"], m["branch_head"], m["branch_kept"], sha)
			}
			want := before
			if tt.exit == 0 {
				want = cloneTree(before)
				want["a.txt"] = F(0o644, "a\nmodified\nagent\n")
				want["added.txt"] = F(0o644, "new\n")
			}
			wantTree(t, "base", want, snapshot(t, x.base, isGit))
			// gc removes the transaction's state (past its grace), not
			// the kept branch.
			wantCode(t, x.airlock("gc", "--older-than", "0"), 0)
			if testbin.Exists(filepath.Join(x.state, "tx", "ag")) {
				t.Errorf("gc --older-than 0 kept the state of ag")
			}
			if got := strings.TrimSpace(g(x.base, "rev-parse", "airlock/ag")); got != sha {
				t.Errorf("after gc airlock/ag is at %q", got)
			}
		})
	}
}

// TestE2EWorktreeConcurrentOpens: 8 processes open worktree transactions
// over one repository at once; none trips over git's locks, each staged
// tree is the working tree, and 8 discards at once leave nothing behind.
func TestE2EWorktreeConcurrentOpens(t *testing.T) {
	x := newH(t)
	g := gitBase(t, x)
	before := snapshot(t, x.base, isGit)
	const n = 8
	procs := make([]proc, n)
	for i := range procs {
		procs[i] = x.start(run{args: []string{"open", "--workdir", x.base, "--backend", "worktree", "--id", fmt.Sprintf("c%d", i)}})
	}
	staged := make([]string, n)
	for i, p := range procs {
		r := p.WaitSettled()
		wantCode(t, r, 0)
		staged[i] = strings.Split(r.Stdout, "\n")[1]
	}
	if got := worktrees(g, x.base); len(got) != n+1 {
		t.Fatalf("%d worktrees registered, want %d: %q", len(got), n+1, got)
	}
	for _, s := range staged {
		wantTree(t, s, before, snapshot(t, s, isGit))
		if got, want := g(s, "status", "--porcelain"), g(x.base, "status", "--porcelain"); got != want {
			t.Errorf("git status in %s:\n%s\nin the base:\n%s", s, got, want)
		}
	}
	for i := range procs {
		procs[i] = x.start(run{args: []string{"discard", fmt.Sprintf("c%d", i)}})
	}
	for _, p := range procs {
		wantCode(t, p.WaitSettled(), 0)
	}
	if got := worktrees(g, x.base); len(got) != 1 {
		t.Errorf("worktrees after discarding all: %q", got)
	}
	if got := g(x.base, "branch", "--list", "airlock/*"); got != "" {
		t.Errorf("branches after discarding all:\n%s", got)
	}
}

// TestE2EGitMergeBase: a file that was clean at open (equal to HEAD's
// blob) and that a human edits in the base while the agent edits another
// part of it merges through git's merge base, whatever the backend; a file
// that was already dirty at open has no known ancestor and is refused.
func TestE2EGitMergeBase(t *testing.T) {
	lines := func(edit map[int]string) string {
		var b strings.Builder
		for i := 1; i <= 12; i++ {
			l := fmt.Sprintf("line %d", i)
			if e, ok := edit[i]; ok {
				l = e
			}
			b.WriteString(l + "\n")
		}
		return b.String()
	}
	for _, backend := range []string{"worktree", "copy"} {
		t.Run(backend, func(t *testing.T) {
			x := newH(t)
			g := gitBase(t, x)
			build(t, x.base, tree{"doc.txt": F(0o644, lines(nil)), "dirty.txt": F(0o644, lines(nil))})
			g(x.base, "add", "doc.txt", "dirty.txt")
			g(x.base, "commit", "-q", "-m", "docs")
			writeFile(t, filepath.Join(x.base, "dirty.txt"), lines(map[int]string{6: "dirty at open"}))

			staged := x.openTx("m", "--backend", backend)
			writeFile(t, filepath.Join(staged, "doc.txt"), lines(map[int]string{2: "agent"}))
			writeFile(t, filepath.Join(x.base, "doc.txt"), lines(map[int]string{11: "human"}))
			r := x.airlock("commit", "m")
			wantCode(t, r, 0)
			wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1"})
			if got, want := testbin.ReadFile(t, filepath.Join(x.base, "doc.txt")), lines(map[int]string{2: "agent", 11: "human"}); got != want {
				t.Errorf("merged doc.txt:\n%s\nwant:\n%s", got, want)
			}

			staged = x.openTx("d", "--backend", backend)
			writeFile(t, filepath.Join(x.base, "dirty.txt"), lines(map[int]string{6: "dirty at open", 12: "human"}))
			writeFile(t, filepath.Join(staged, "dirty.txt"), lines(map[int]string{1: "agent", 6: "dirty at open"}))
			r = x.airlock("commit", "d")
			wantCode(t, r, 75)
			wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "BaseDrift", "refused_paths": "dirty.txt"})
			wantCode(t, x.airlock("discard", "d"), 0)
		})
	}
}

// TestE2EWorktreeCrashThenGC: an open killed right after `git worktree
// add`, before its open record exists, leaves a registration; gc finds it
// under the state directory and removes it, its branch and its state.
func TestE2EWorktreeCrashThenGC(t *testing.T) {
	x := newH(t)
	g := gitBase(t, x)
	r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=worktree-created"}, "open", "--workdir", x.base, "--backend", "worktree", "--id", "cr")
	if r.Signal != syscall.SIGKILL {
		t.Fatalf("open was not killed at worktree-created\n%s", r)
	}
	if got := worktrees(g, x.base); len(got) != 2 || !strings.HasPrefix(got[1], x.state+"/") {
		t.Fatalf("the crash left no airlock registration: %q", got)
	}
	// A dry run changes nothing.
	r = x.airlock("gc", "--dry-run")
	wantCode(t, r, 0)
	if got := worktrees(g, x.base); len(got) != 2 {
		t.Fatalf("gc --dry-run removed a registration: %q", got)
	}
	r = x.airlock("gc")
	wantCode(t, r, 0)
	if !strings.Contains(r.Stdout, "removed cr (its open died after its git worktree was made") {
		t.Errorf("gc does not report the crashed open:\n%s", r)
	}
	if got := worktrees(g, x.base); len(got) != 1 || got[0] != x.base {
		t.Errorf("worktrees after gc: %q", got)
	}
	if got := g(x.base, "worktree", "prune", "--dry-run", "-v"); got != "" {
		t.Errorf("git would still prune:\n%s", got)
	}
	if got := g(x.base, "branch", "--list", "airlock/*"); got != "" {
		t.Errorf("branches after gc:\n%s", got)
	}
	if testbin.Exists(filepath.Join(x.state, "tx", "cr")) {
		t.Errorf("the crashed transaction's state is still there")
	}
	// The same id opens cleanly again.
	staged := x.openTx("cr", "--backend", "worktree")
	wantCode(t, x.airlock("discard", "cr"), 0)
	if testbin.Exists(staged) {
		t.Errorf("%s still there", staged)
	}
}

// TestE2EWorktreeRefusals: a base outside a git repository refuses the
// worktree backend (never a silent fallback), and auto never picks it.
func TestE2EWorktreeRefusals(t *testing.T) {
	testbin.Require(t, "git", "the worktree backend runs it")
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	r := x.airlock("open", "--workdir", x.base, "--backend", "worktree")
	wantCode(t, r, 125)
	oneLine(t, r, x.base, "not in a git work tree", "--backend copy")
	if testbin.Exists(filepath.Join(x.state, "tx")) {
		if ents, _ := os.ReadDir(filepath.Join(x.state, "tx")); len(ents) != 0 {
			t.Errorf("a refused open left state: %v", ents)
		}
	}

	gitBase(t, x)
	staged := x.openTx("auto")
	if m := showJSON(t, x, "auto"); m["backend"] == "worktree" || m["branch"] != nil {
		t.Errorf("auto picked %v (branch %v)", m["backend"], m["branch"])
	}
	if !testbin.Exists(filepath.Join(staged, ".git", "HEAD")) {
		t.Errorf("auto's staged tree has no copy of .git")
	}
	wantCode(t, x.airlock("discard", "auto"), 0)
}

// TestE2EWorktreeRunAtStagedPath: run does not use same-path mode with a
// worktree (the bind mount would hide the repository), says so, and git
// works in the command.
func TestE2EWorktreeRunAtStagedPath(t *testing.T) {
	x := newH(t)
	gitBase(t, x)
	r := x.exec(run{dir: filepath.Join(x.base, "src"), args: []string{"run", "--workdir", x.base, "--backend", "worktree", "--id", "sp", "--", "sh", "-c",
		`pwd -P; git rev-parse --abbrev-ref HEAD; git status --porcelain -- . | wc -l`}})
	wantCode(t, r, 0)
	out := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(out) != 3 || out[0] != filepath.Join(x.state, "tx", "sp", "staged", "src") || out[1] != "airlock/sp" || strings.TrimSpace(out[2]) != "3" {
		t.Errorf("the command saw %q; want it in the staged src/ on airlock/sp with 3 changed paths\n%s", out, r)
	}
	if !strings.Contains(r.Stderr, "same-path mode is off for --backend worktree") {
		t.Errorf("run does not say same-path mode is off:\n%s", r.Stderr)
	}
	wantBlock(t, r, map[string]string{"outcome": "no_changes"})
}

// TestE2EWorktreeRepositoryChanged (attack round 4, F/f4): a worktree
// shares its repository's .git with the base, and git run in it changes
// that repository at once: an alias in its config, a hook in its hooks
// directory. airlock cannot take that back, but it must not let it pass in
// silence: a commit is refused (BoundaryEscape) naming what changed, and a
// discard says so.
func TestE2EWorktreeRepositoryChanged(t *testing.T) {
	for _, tt := range []struct {
		name, script string
		exit         int
		what         string
	}{
		{"config", `git config alias.st '!touch "$HOME/pwned"'; printf 'x\n' >> a.txt`, 0, "config"},
		{"hook", `d=$(git rev-parse --git-common-dir); printf '#!/bin/sh\ntouch "$HOME/pwned"\n' > "$d/hooks/pre-commit"; chmod +x "$d/hooks/pre-commit"; printf 'x\n' >> a.txt`, 0, "hooks"},
		{"discarded", `git config alias.st '!touch "$HOME/pwned"'; printf 'x\n' >> a.txt; exit 3`, 3, "config"},
		// Attack round 5, G/g4: with extensions.worktreeConfig, the base's
		// git also reads config.worktree.
		// Attack round 6, H/e3: a helper a hook runs, one level down; the
		// config of a submodule repository kept in the common directory.
		{"hook helper", `d=$(git rev-parse --git-common-dir); printf '#!/bin/sh\ntouch "$HOME/pwned"\n' > "$d/hooks/lib/real"; printf 'x\n' >> a.txt`, 0, "hooks"},
		{"submodule config", `d=$(git rev-parse --git-common-dir); git config -f "$d/modules/sub/config" core.fsmonitor 'touch "$HOME/pwned"'; printf 'x\n' >> a.txt`, 0, "modules"},
		{"config.worktree", `d=$(git rev-parse --git-common-dir); printf '[core]\n\tfsmonitor = touch "$HOME/pwned"\n' > "$d/config.worktree"; printf 'x\n' >> a.txt`, 0, "config"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := newH(t)
			g := gitBase(t, x)
			common := filepath.Join(x.base, ".git")
			switch tt.name {
			case "config.worktree":
				g(x.base, "config", "extensions.worktreeConfig", "true")
			case "hook helper":
				must(t, os.MkdirAll(filepath.Join(common, "hooks", "lib"), 0o755))
				must(t, os.WriteFile(filepath.Join(common, "hooks", "lib", "real"), []byte("#!/bin/sh\n"), 0o755))
			case "submodule config":
				must(t, os.MkdirAll(filepath.Join(common, "modules", "sub"), 0o755))
				must(t, os.WriteFile(filepath.Join(common, "modules", "sub", "config"), []byte("[core]\n\tbare = false\n"), 0o644))
			}
			before := snapshot(t, x.base, isGit)
			r := x.exec(run{dir: x.base, args: []string{"run", "--backend", "worktree", "--id", "rg", "--", "sh", "-c", tt.script}})
			if tt.exit == 0 {
				wantCode(t, r, 75)
				wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "BoundaryEscape"})
				wantTree(t, "base after the refusal", before, snapshot(t, x.base, isGit))
			} else {
				wantCode(t, r, tt.exit)
				wantBlock(t, r, map[string]string{"outcome": "discarded"})
			}
			if !strings.Contains(r.Stderr, filepath.Join(".git", tt.what)) {
				t.Errorf("the settle does not name the repository's %s that the command changed:\n%s", tt.what, r.Stderr)
			}
		})
	}
}

// TestE2EWorktreeBranchMovedIsSaid (attack round 6, H/e3): the command
// moves the branch the base has checked out (a worktree shares refs). It
// cannot be told from the user's own commit in the base, so it is not
// refused, but every settle says so, with how to look.
func TestE2EWorktreeBranchMovedIsSaid(t *testing.T) {
	x := newH(t)
	g := gitBase(t, x)
	branch := strings.TrimPrefix(strings.TrimSpace(g(x.base, "symbolic-ref", "HEAD")), "refs/heads/")
	r := x.exec(run{dir: x.base, args: []string{"run", "--backend", "worktree", "--id", "bm", "--", "sh", "-c",
		"git commit -q --allow-empty -m agent && git update-ref refs/heads/" + branch + " HEAD && printf 'x\\n' >> a.txt"}})
	wantCode(t, r, 0)
	if !strings.Contains(r.Stderr, branch+" moved from") || !strings.Contains(r.Stderr, "git reflog") {
		t.Errorf("the settle does not say %s moved:\n%s", branch, r.Stderr)
	}
}
