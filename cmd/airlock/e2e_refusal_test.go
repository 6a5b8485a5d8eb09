package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// syncScript writes the staged f, then says "ready" through the sync dir
// and waits for "go": the test changes the base in between.
const syncScript = `set -e
printf 'agent edit\n' > f
: > "$SYNC/ready"
while [ ! -e "$SYNC/go" ]; do sleep 0.01; done
`

// TestE2EBaseDrift: a path the command changed that the user also changed
// meanwhile refuses the commit and keeps the user's edit; a concurrent edit
// of another path does not.
func TestE2EBaseDrift(t *testing.T) {
	t.Run("same path refuses", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{"f": F(0o644, "original\n"), "g": F(0o644, "g\n"), "d/h": F(0o644, "h\n")})
		sync := testbin.RealDir(t)
		p := x.start(run{env: []string{"SYNC=" + sync}, args: []string{"run", "--workdir", x.base, "--id", "drift1", "--", "sh", "-c", syncScript}})
		waitFile(t, filepath.Join(sync, "ready"))
		writeFile(t, filepath.Join(x.base, "f"), "the user's concurrent edit\n")
		want := snapshot(t, x.base, nil)
		touch(t, filepath.Join(sync, "go"))
		r := p.WaitSettled()
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"tx": "drift1", "outcome": "refused", "refusal": "BaseDrift", "refused_paths": "f"})
		wantTree(t, "base after BaseDrift", want, snapshot(t, x.base, nil))
		if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != "the user's concurrent edit\n" {
			t.Errorf("base f = %q: the user's edit was lost", got)
		}

		r = x.airlock("commit", "drift1")
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"tx": "drift1", "outcome": "refused", "refusal": "BaseDrift", "refused_paths": "f"})
		wantTree(t, "base after a second commit", want, snapshot(t, x.base, nil))
	})

	// Another path: once with files older than any racy window, once with
	// files written just before the run (as an editor that just saved).
	for _, fresh := range []bool{false, true} {
		name := "another path commits, old files"
		if fresh {
			name = "another path commits, files written just before"
		}
		t.Run(name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"f": F(0o644, "original\n"), "g": F(0o644, "g\n"), "d/h": F(0o644, "h\n")})
			if !fresh {
				backdate(t, x.base, time.Hour)
			}
			sync := testbin.RealDir(t)
			p := x.start(run{env: []string{"SYNC=" + sync}, args: []string{"run", "--workdir", x.base, "--id", "drift2", "--", "sh", "-c", syncScript}})
			waitFile(t, filepath.Join(sync, "ready"))
			writeFile(t, filepath.Join(x.base, "g"), "the user's concurrent edit of g\n")
			want := snapshot(t, x.base, nil)
			want["f"] = F(0o644, "agent edit\n")
			touch(t, filepath.Join(sync, "go"))
			r := p.WaitSettled()
			wantCode(t, r, 0)
			wantBlock(t, r, map[string]string{"outcome": "committed", "added": "0", "modified": "1", "deleted": "0", "refusal": ""})
			wantTree(t, "base after commit", want, snapshot(t, x.base, nil))
		})
	}
}

// TestE2EProtectedPaths: a change under a protected selector needs
// approval; without it the base is untouched and the transaction is kept.
func TestE2EProtectedPaths(t *testing.T) {
	base := tree{"README": F(0o644, "r\n"), ".github/workflows/old.yml": F(0o644, "old\n"), ".vscode/settings.json": F(0o644, "{}\n")}
	script := func(p string) string {
		return `set -e; mkdir -p "$(dirname "` + p + `")"; printf 'run: evil\n' > "` + p + `"; printf 'other\n' > other.txt`
	}
	for _, p := range []string{".envrc", ".vscode/tasks.json", ".github/workflows/ci.yml", ".airlock.toml"} {
		t.Run("default "+p, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, base)
			before := snapshot(t, x.base, nil)
			r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", script(p))
			wantCode(t, r, 75)
			wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ProtectedPathNotApproved"})
			if paths := strings.Split(r.Settle["refused_paths"], ","); !contains(paths, p) || contains(paths, "other.txt") {
				t.Errorf("refused_paths = %q, want it to name %s and not other.txt", r.Settle["refused_paths"], p)
			}
			if !strings.Contains(r.Stderr, p) {
				t.Errorf("the message does not name %s:\n%s", p, r.Stderr)
			}
			wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
		})
	}

	t.Run("--approve commits", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, base)
		r := x.airlock("run", "--workdir", x.base, "--approve", "--", "sh", "-c", script(".envrc"))
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "committed", "added": "2"})
		if got := testbin.ReadFile(t, filepath.Join(x.base, ".envrc")); got != "run: evil\n" {
			t.Errorf(".envrc = %q", got)
		}
	})

	t.Run("--no-default-protect does not drop the project's", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, base)
		r := x.airlock("run", "--workdir", x.base, "--no-default-protect", "--", "sh", "-c", script(".github/workflows/ci.yml"))
		wantCode(t, r, 75)
	})

	t.Run("default_protect = false commits", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, base)
		must(t, os.WriteFile(filepath.Join(x.base, ".airlock.toml"), []byte("default_protect = false\n"), 0o644))
		r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", script(".github/workflows/ci.yml"))
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "committed", "added": "2"})
		if !testbin.Exists(filepath.Join(x.base, ".github/workflows/ci.yml")) {
			t.Errorf("ci.yml was not committed")
		}
	})

	t.Run("--protect secrets/**", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, base)
		before := snapshot(t, x.base, nil)
		r := x.airlock("run", "--workdir", x.base, "--protect", "secrets/**", "--", "sh", "-c", script("secrets/a"))
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "ProtectedPathNotApproved"})
		if paths := strings.Split(r.Settle["refused_paths"], ","); !contains(paths, "secrets/a") {
			t.Errorf("refused_paths = %q, want it to name secrets/a", r.Settle["refused_paths"])
		}
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	})

	t.Run("commit ID --approve after a refusal", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, base)
		before := snapshot(t, x.base, nil)
		r := x.airlock("run", "--workdir", x.base, "--id", "prot1", "--", "sh", "-c", script(".envrc"))
		wantCode(t, r, 75)
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))

		r = x.airlock("commit", "prot1")
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"tx": "prot1", "outcome": "refused", "refusal": "ProtectedPathNotApproved", "refused_paths": ".envrc"})
		wantTree(t, "base after an unapproved commit", before, snapshot(t, x.base, nil))

		r = x.airlock("commit", "prot1", "--approve")
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"tx": "prot1", "outcome": "committed", "added": "2", "modified": "0", "deleted": "0", "refusal": ""})
		after := snapshot(t, x.base, nil)
		want := tree{}
		for k, v := range before {
			want[k] = v
		}
		want[".envrc"] = F(0o644, "run: evil\n")
		want["other.txt"] = F(0o644, "other\n")
		wantTree(t, "base after the approved commit", want, after)
		first := r.Settle

		r = x.airlock("commit", "prot1")
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"tx": "prot1", "outcome": "committed", "added": "2",
			"result_digest": first["result_digest"], "receipt": first["receipt"]})
		wantTree(t, "base after committing again", want, snapshot(t, x.base, nil))
	})
}

// TestE2EExcludes: excluded paths are not staged and not deleted; a path
// the command creates under an exclude is added where the base has
// nothing, and refused where the base has something.
func TestE2EExcludes(t *testing.T) {
	base := tree{
		"keep.txt":                    F(0o644, "keep\n"),
		"a.log":                       F(0o644, "log\n"),
		"src/b.log":                   F(0o644, "log b\n"),
		"node_modules/x/index.js":     F(0o644, "js\n"),
		".aider.chat.history.md":      F(0o644, "chat\n"),
		".claude/settings.local.json": F(0o644, "{}\n"),
		".claude/commands/c.md":       F(0o644, "cmd\n"),
	}
	excl := []string{"--exclude", "node_modules/", "--exclude", "*.log"}
	absent := `for p in a.log src/b.log node_modules .aider.chat.history.md .claude/settings.local.json; do
  if [ -e "$p" ]; then echo "staged: $p" >&2; exit 9; fi
done
test -f .claude/commands/c.md || { echo "not staged: .claude/commands/c.md" >&2; exit 8; }
`

	t.Run("not staged, not deleted, one-directional", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, base)
		before := snapshot(t, x.base, nil)
		args := append([]string{"run", "--workdir", x.base}, excl...)
		r := x.airlock(append(args, "--", "sh", "-c", absent+`printf 'edited\n' > keep.txt; printf 'new\n' > new.log; mkdir -p sub/node_modules; printf 'n\n' > sub/node_modules/n.js`)...)
		wantCode(t, r, 0)
		// new.log and sub/node_modules/n.js; the directories that hold
		// it are not counted, as git counts.
		wantBlock(t, r, map[string]string{"outcome": "committed", "added": "2", "modified": "1", "deleted": "0"})
		want := tree{}
		for k, v := range before {
			want[k] = v
		}
		want["keep.txt"] = F(0o644, "edited\n")
		want["new.log"] = F(0o644, "new\n")
		want["sub"] = D(0o755)
		want["sub/node_modules"] = D(0o755)
		want["sub/node_modules/n.js"] = F(0o644, "n\n")
		wantTree(t, "base after commit", want, snapshot(t, x.base, nil))
	})

	t.Run("an excluded path the base holds refuses", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, base)
		before := snapshot(t, x.base, nil)
		args := append([]string{"run", "--workdir", x.base}, excl...)
		r := x.airlock(append(args, "--", "sh", "-c", absent+`printf 'edited\n' > keep.txt; printf 'clobber\n' > a.log`)...)
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "BaseDrift", "refused_paths": "a.log"})
		wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	})
}

// TestE2EUnsupportedEntries: a FIFO in the base is warned about, never
// staged and never deleted; a FIFO the command makes refuses the commit.
func TestE2EUnsupportedEntries(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n"), "sub/pipe0": P()})
	before := snapshot(t, x.base, nil)
	r := x.airlock("run", "--workdir", x.base, "--", "sh", "-c", `test ! -e sub/pipe0 || exit 9; printf 'new\n' > new.txt`)
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed", "added": "1", "modified": "0", "deleted": "0"})
	if !strings.Contains(r.Stderr, "warning") || !strings.Contains(r.Stderr, "sub/pipe0") {
		t.Errorf("no warning naming sub/pipe0 on stderr:\n%s", r.Stderr)
	}
	want := before
	want["new.txt"] = F(0o644, "new\n")
	wantTree(t, "base after commit", want, snapshot(t, x.base, nil))

	before = snapshot(t, x.base, nil)
	r = x.airlock("run", "--workdir", x.base, "--", "sh", "-c", `mkfifo p; printf 'x\n' > x.txt`)
	wantCode(t, r, 75)
	wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "UnsupportedEntry", "refused_paths": "p"})
	wantTree(t, "base after refusal", before, snapshot(t, x.base, nil))
	if _, err := os.Lstat(filepath.Join(x.base, "p")); err == nil {
		t.Errorf("the FIFO reached the base")
	}
}
