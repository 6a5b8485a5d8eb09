package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2ERebaseBaseMovesAgain is the race of a rebase with a writer in the
// base: the rebase measures the base and reads what it will take in, then
// (held at the pause point rebase-measured) the base changes again at a
// path it read. The rebase must refuse BaseDrift naming that path and
// leave the transaction exactly as it was: its staged tree untouched, and
// its record of the base too, which the next rebase proves by taking in
// the newest content, and the commit after it by landing with no drift.
func TestE2ERebaseBaseMovesAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		again func(t *testing.T, path string) // the second change, at the pause
		want  tree                            // the staged notes.txt after the second rebase
	}{
		{"edited", func(t *testing.T, p string) { writeFile(t, p, "notes v3, a different size\n") },
			tree{"notes.txt": F(0o644, "notes v3, a different size\n")}},
		{"deleted", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, tree{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"notes.txt": F(0o644, "notes v1\n"), "code.txt": F(0o644, "code v1\n")})
			wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
			staged := x.stagedPath("t1")
			writeFile(t, filepath.Join(staged, "code.txt"), "code by the agent\n")
			writeFile(t, filepath.Join(x.base, "notes.txt"), "notes v2\n")
			before := snapshot(t, staged, nil)

			pause := testbin.RealDir(t)
			p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=rebase-measured:" + pause}, args: []string{"rebase", "t1"}})
			waitFile(t, filepath.Join(pause, "reached"))
			tc.again(t, filepath.Join(x.base, "notes.txt"))
			touch(t, filepath.Join(pause, "continue"))
			r := p.WaitSettled()

			wantCode(t, r, 75)
			if !strings.Contains(r.Stderr, "refused (BaseDrift)") || !strings.Contains(r.Stderr, `"notes.txt"`) || !strings.Contains(r.Stderr, "rebase again") {
				t.Errorf("the refusal does not name the path that moved and what to do:\n%s", r.Stderr)
			}
			wantTree(t, "staged tree after the refused rebase", before, snapshot(t, staged, nil))

			r = x.airlock("rebase", "t1")
			wantCode(t, r, 0)
			got := snapshot(t, staged, func(rel string) bool { return rel != "notes.txt" })
			wantTree(t, "staged notes.txt after the second rebase", tc.want, got)

			r = x.airlock("commit", "t1")
			wantCode(t, r, 0)
			wantBlock(t, r, map[string]string{"outcome": "committed", "modified": "1", "added": "0", "deleted": "0", "merged_paths": ""})
			base := snapshot(t, x.base, nil)
			want := tree{"code.txt": F(0o644, "code by the agent\n")}
			for k, v := range tc.want {
				want[k] = v
			}
			wantTree(t, "base after the commit", want, base)
		})
	}
}

// TestE2ERebaseStagedWrittenMeanwhile: a path the transaction had not
// changed, which the rebase plans to take from the base, written in the
// staged workspace while the rebase reads (an agent still at work there)
// is the transaction's now: the rebase refuses, nothing is rebased, and the
// write is kept. (A rebase after it finds both sides changed, with no
// ancestor known in a base that is no git repository, and refuses too.)
func TestE2ERebaseStagedWrittenMeanwhile(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"notes.txt": F(0o644, "notes v1\n"), "code.txt": F(0o644, "code v1\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "code.txt"), "code by the agent\n")
	writeFile(t, filepath.Join(x.base, "notes.txt"), "notes v2\n")

	pause := testbin.RealDir(t)
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=rebase-measured:" + pause}, args: []string{"rebase", "t1"}})
	waitFile(t, filepath.Join(pause, "reached"))
	writeFile(t, filepath.Join(staged, "notes.txt"), "notes v1\nand the agent's line\n")
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	if r.Code == 0 || !strings.Contains(r.Stderr, `"notes.txt" changed in the staged workspace`) {
		t.Fatalf("a rebase over a staged write made while it read: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := testbin.ReadFile(t, filepath.Join(staged, "notes.txt")); got != "notes v1\nand the agent's line\n" {
		t.Fatalf("the agent's write was lost: notes.txt is %q", got)
	}
	wantCode(t, x.airlock("rebase", "t1"), 75)
	if got := testbin.ReadFile(t, filepath.Join(staged, "notes.txt")); got != "notes v1\nand the agent's line\n" {
		t.Errorf("a second rebase lost the agent's write: notes.txt is %q", got)
	}
}

// TestE2EDiffBeforeSideFromGitHead: a file the transaction edited that the
// base then changed too, where no airlock commit kept its content at open:
// in a git repository where it was clean at open, `diff` (and the review
// page, which reads the same) shows the transaction's edit against HEAD's
// blob, its content at open, instead of failing.
func TestE2EDiffBeforeSideFromGitHead(t *testing.T) {
	x := newH(t)
	a8Git(t, x, tree{"notes.txt": F(0o644, "one\ntwo\nthree\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	writeFile(t, filepath.Join(x.stagedPath("t1"), "notes.txt"), "one\ntwo\nthree\nby the agent\n")
	writeFile(t, filepath.Join(x.base, "notes.txt"), "one, by the human\ntwo\nthree\n")
	r := x.airlock("diff", "t1")
	wantCode(t, r, 0)
	for _, want := range []string{"--- a/notes.txt", "+++ b/notes.txt", "+by the agent", " one\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("diff does not hold %q:\n%s%s", want, r.Stdout, r.Stderr)
		}
	}
	if strings.Contains(r.Stdout, "by the human") {
		t.Errorf("diff shows the base's later edit, not the transaction's change against its content at open:\n%s", r.Stdout)
	}
}
