package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Scenario tests for several agents over one base: land, merge conflicts,
// diff as a patch, validation on candidates, undo and log, gc, racing
// commits and port blocks.

// --- helpers ---

// openTx opens transaction id over the scenario's base with `airlock open`
// and returns the staged path it printed.
func (x *h) openTx(id string, flags ...string) string {
	x.t.Helper()
	r := x.airlock(append([]string{"open", "--workdir", x.base, "--id", id}, flags...)...)
	wantCode(x.t, r, 0)
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	if len(lines) != 2 || lines[0] != id || !filepath.IsAbs(lines[1]) {
		x.t.Fatalf("open printed %q, want the id %s and an absolute staged path\n%s", r.Stdout, id, r)
	}
	return lines[1]
}

// airlockMulti runs a command that may print several airlock.* blocks
// (land): they are split, not checked for duplicate keys.
func (x *h) airlockMulti(args ...string) (result, []map[string]string) {
	x.t.Helper()
	r := x.start(run{args: args}).Wait()
	blocks, err := r.Blocks()
	if err != nil {
		x.t.Fatalf("%v\n%s", err, r)
	}
	return result{Result: r}, blocks
}

// summary is the first two words of each line of land's stdout: the
// verdict and the id.
func summary(stdout string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && (f[0] == "landed" || f[0] == "refused" || f[0] == "failed" || f[0] == "empty") {
			out = append(out, f[0]+" "+f[1])
		}
	}
	return out
}

func numbered(name string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s line %d", name, i+1)
	}
	return out
}

func text(lines []string) string { return strings.Join(lines, "\n") + "\n" }

// editLines replaces lines (1-based) of the file at path, keeping its mode.
func editLines(t *testing.T, path string, edits map[int]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(testbin.ReadFile(t, path), "\n"), "\n")
	for i, s := range edits {
		lines[i-1] = s
	}
	writeFile(t, path, text(lines))
}

func cloneTree(in tree) tree {
	out := tree{}
	for k, v := range in {
		out[k] = v
	}
	return out
}

func mkdirAll(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// copyTree copies dir with cp -a to a fresh directory and returns it.
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(testbin.RealDir(t), "copy")
	if out, err := exec.Command("cp", "-a", dir, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s: %v\n%s", dir, err, out)
	}
	return dst
}

// sh runs a command in dir with the scenario's environment and returns
// its stdout.
func (x *h) sh(dir string, stdin []byte, name string, args ...string) string {
	x.t.Helper()
	r := testbin.Run(x.t, testbin.Cmd{Bin: name, Args: args, Dir: dir, Env: x.environ(), Stdin: string(stdin), Timeout: commandTimeout})
	if r.Code != 0 {
		x.t.Fatalf("%s %q in %s: exit %d\n%s%s", name, args, dir, r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// logIDs is the transaction ids `airlock log` prints, in its order.
func (x *h) logIDs() []string {
	x.t.Helper()
	r := x.airlock("log", "--workdir", x.base)
	wantCode(x.t, r, 0)
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if f := strings.Fields(l); len(f) >= 3 {
			ids = append(ids, f[2])
		}
	}
	return ids
}

type listEntry struct {
	ID           string   `json:"id"`
	Status       string   `json:"status"`
	Refusal      string   `json:"refusal"`
	RefusedPaths []string `json:"refused_paths"`
	PortBase     int      `json:"port_base"`
	PID          int      `json:"pid"`
	OwnerAlive   bool     `json:"owner_alive"`
}

func (x *h) listJSON(flags ...string) []listEntry {
	x.t.Helper()
	r := x.airlock(append([]string{"list", "--json"}, flags...)...)
	wantCode(x.t, r, 0)
	var out []listEntry
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		x.t.Fatalf("list --json: %v\n%s", err, r)
	}
	return out
}

// releaseAtEnd touches sync/go when the test ends, before the processes
// it started are reaped: a command that waits for it (and would hold the
// output pipes open past airlock's death) then ends even when the test
// fails half-way. Call it after starting them: cleanups run last first.
func releaseAtEnd(t *testing.T, sync string) {
	t.Cleanup(func() { os.WriteFile(filepath.Join(sync, "go"), nil, 0o644) })
}

func eq(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

// --- 1. land: the union of N transactions' edits ---

// TestE2ELandUnion: four transactions opened at once over one base, each
// editing different lines of the same two files and files of its own, land
// in order with the union of their edits.
func TestE2ELandUnion(t *testing.T) {
	x := newH(t)
	a, b := numbered("a", 24), numbered("b", 24)
	build(t, x.base, tree{
		"a.txt":         F(0o644, text(a)),
		"src/b.txt":     F(0o644, text(b)),
		"B-gone.txt":    F(0o644, "B deletes me\n"),
		"C-tool":        F(0o644, "#!/bin/sh\n"),
		"untouched.txt": F(0o644, "nobody edits me\n"),
	})
	want := snapshot(t, x.base, nil)
	ids := []string{"A", "B", "C", "D"}
	staged := map[string]string{}
	for _, id := range ids {
		staged[id] = x.openTx(id)
	}
	for i, id := range ids {
		la, lb := 2+6*i, 5+6*i
		ea, eb := fmt.Sprintf("a line %d, edited by %s", la, id), fmt.Sprintf("b line %d, edited by %s", lb, id)
		editLines(t, filepath.Join(staged[id], "a.txt"), map[int]string{la: ea})
		editLines(t, filepath.Join(staged[id], "src", "b.txt"), map[int]string{lb: eb})
		a[la-1], b[lb-1] = ea, eb
		mkdirAll(t, filepath.Join(staged[id], id, "nested"))
		writeFile(t, filepath.Join(staged[id], id, "nested", "own.txt"), "written by "+id+"\n")
		want[id], want[id+"/nested"] = D(0o755), D(0o755)
		want[id+"/nested/own.txt"] = F(0o644, "written by "+id+"\n")
	}
	must(t, os.Remove(filepath.Join(staged["B"], "B-gone.txt")))
	delete(want, "B-gone.txt")
	must(t, os.Chmod(filepath.Join(staged["C"], "C-tool"), 0o755))
	want["C-tool"] = F(0o755, "#!/bin/sh\n")
	must(t, os.Symlink("a.txt", filepath.Join(staged["D"], "D-link")))
	want["D-link"] = L("a.txt")
	want["a.txt"], want["src/b.txt"] = F(0o644, text(a)), F(0o644, text(b))

	r, blocks := x.airlockMulti("land", "A", "B", "C", "D")
	wantCode(t, r, 0)
	wantTree(t, "base after landing A B C D", want, snapshot(t, x.base, nil))
	if got, w := summary(r.Stdout), []string{"landed A", "landed B", "landed C", "landed D"}; !eq(got, w) {
		t.Errorf("land summary %q, want %q\n%s", got, w, r)
	}
	if len(blocks) != 4 {
		t.Fatalf("land printed %d airlock.* blocks, want 4\n%s", len(blocks), r)
	}
	for i, bl := range blocks {
		if bl["tx"] != ids[i] || bl["outcome"] != "committed" {
			t.Errorf("block %d: tx=%s outcome=%s, want %s committed", i, bl["tx"], bl["outcome"], ids[i])
		}
	}
	if got, w := x.logIDs(), []string{"D", "C", "B", "A"}; !eq(got, w) {
		t.Errorf("log lists %q, want %q (newest first)", got, w)
	}
	if l := x.listJSON(); len(l) != 0 {
		t.Errorf("list still shows %d transactions after they all landed: %+v", len(l), l)
	}
}

// TestE2EConcurrentRuns: four `airlock run` agents over one base, each
// editing different lines of the same two files and a file of its own,
// released together: all commit, and the base holds the union.
func TestE2EConcurrentRuns(t *testing.T) {
	x := newH(t)
	a, b := numbered("a", 24), numbered("b", 24)
	build(t, x.base, tree{"a.txt": F(0o644, text(a)), "src/b.txt": F(0o644, text(b))})
	want := snapshot(t, x.base, nil)
	sync := testbin.RealDir(t)
	ids := []string{"A", "B", "C", "D"}
	var procs []proc
	for i, id := range ids {
		la, lb := 3+6*i, 6+6*i
		script := fmt.Sprintf(`set -e
sed -i '%ds/.*/a edited by %s/' a.txt
sed -i '%ds/.*/b edited by %s/' src/b.txt
echo %s > own-%s.txt
: > "$SYNC/ready-%s"
while [ ! -e "$SYNC/go" ]; do sleep 0.01; done
`, la, id, lb, id, id, id, id)
		a[la-1], b[lb-1] = "a edited by "+id, "b edited by "+id
		want["own-"+id+".txt"] = F(0o644, id+"\n")
		procs = append(procs, x.start(run{env: []string{"SYNC=" + sync}, args: []string{"run", "--workdir", x.base, "--id", id, "--", "sh", "-c", script}}))
	}
	releaseAtEnd(t, sync)
	for _, id := range ids {
		waitFile(t, filepath.Join(sync, "ready-"+id))
	}
	touch(t, filepath.Join(sync, "go"))
	for i, p := range procs {
		r := p.WaitSettled()
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"tx": ids[i], "outcome": "committed", "added": "1", "modified": "2"})
	}
	want["a.txt"], want["src/b.txt"] = F(0o644, text(a)), F(0o644, text(b))
	wantTree(t, "base after four concurrent runs", want, snapshot(t, x.base, nil))
	if got := x.logIDs(); len(got) != 4 {
		t.Errorf("log lists %q, want four commits", got)
	}
}

// --- 2. overlapping edits ---

// TestE2EMergeConflict: two transactions editing the same line; the second
// is refused MergeConflict naming the file, the base holds exactly the
// first's result, and the refused one is kept.
func TestE2EMergeConflict(t *testing.T) {
	for _, how := range []string{"commit", "land"} {
		t.Run(how, func(t *testing.T) {
			x := newH(t)
			lines := numbered("f", 12)
			build(t, x.base, tree{"f.txt": F(0o644, text(lines)), "g.txt": F(0o644, "g\n")})
			want := snapshot(t, x.base, nil)
			s1, s2, s3 := x.openTx("first"), x.openTx("second"), x.openTx("third")
			writeFile(t, filepath.Join(s3, "third.txt"), "third\n")
			editLines(t, filepath.Join(s1, "f.txt"), map[int]string{6: "line 6 by first"})
			writeFile(t, filepath.Join(s1, "first.txt"), "first\n")
			editLines(t, filepath.Join(s2, "f.txt"), map[int]string{6: "line 6 by second", 11: "line 11 by second"})
			writeFile(t, filepath.Join(s2, "second.txt"), "second\n")
			writeFile(t, filepath.Join(s2, "g.txt"), "g by second\n")
			lines[5] = "line 6 by first"
			want["f.txt"], want["first.txt"] = F(0o644, text(lines)), F(0o644, "first\n")
			stagedSecond := snapshot(t, s2, nil)

			want["third.txt"] = F(0o644, "third\n")
			if how == "commit" {
				wantCode(t, x.airlock("commit", "first"), 0)
				r := x.airlock("commit", "second")
				wantCode(t, r, 75)
				wantBlock(t, r, map[string]string{"tx": "second", "outcome": "refused", "refusal": "MergeConflict", "refused_paths": "f.txt"})
				wantCode(t, x.airlock("commit", "third"), 0)
			} else {
				// The refused one in the middle does not stop the queue.
				r, blocks := x.airlockMulti("land", "first", "second", "third")
				wantCode(t, r, 75)
				if got, w := summary(r.Stdout), []string{"landed first", "refused second", "landed third"}; !eq(got, w) {
					t.Errorf("land summary %q, want %q\n%s", got, w, r)
				}
				if !strings.Contains(r.Stdout, "MergeConflict") || !strings.Contains(r.Stdout, "f.txt") {
					t.Errorf("land's summary does not say MergeConflict on f.txt\n%s", r)
				}
				if len(blocks) != 3 || blocks[1]["refusal"] != "MergeConflict" || blocks[1]["refused_paths"] != "f.txt" {
					t.Errorf("land's blocks: %v", blocks)
				}
			}
			wantTree(t, "base after the conflict", want, snapshot(t, x.base, nil))

			r := x.airlock("show", "second")
			wantCode(t, r, 0)
			for _, s := range []string{"status:    refused", "refusal:   MergeConflict f.txt"} {
				if !strings.Contains(r.Stdout, s) {
					t.Errorf("show second does not say %q\n%s", s, r)
				}
			}
			l := x.listJSON()
			if len(l) != 1 || l[0].ID != "second" || l[0].Status != "refused" || l[0].Refusal != "MergeConflict" || !eq(l[0].RefusedPaths, []string{"f.txt"}) {
				t.Errorf("list --json = %+v, want only second, refused MergeConflict [f.txt]", l)
			}
			if r := x.airlock("list"); !regexp.MustCompile(`(?m)^second\s+refused\s`).MatchString(r.Stdout) {
				t.Errorf("list does not show second as refused\n%s", r)
			}
			wantTree(t, "the refused transaction's staged tree", stagedSecond, snapshot(t, s2, nil))

			r = x.airlock("commit", "second")
			wantCode(t, r, 75)
			wantBlock(t, r, map[string]string{"refusal": "MergeConflict", "refused_paths": "f.txt"})
			wantTree(t, "base after committing the refused one again", want, snapshot(t, x.base, nil))
		})
	}
}

// --- 3. diff as a patch ---

var diffBase = tree{
	"text.txt":    F(0o644, text(numbered("text", 12))),
	"bin.dat":     F(0o644, "\x00\x01\x02\x03 binary \xff\xfe\x00 old"),
	"script.sh":   F(0o644, "#!/bin/sh\necho hi\n"),
	"both.sh":     F(0o644, "echo old\n"),
	"link":        L("text.txt"),
	"gone.txt":    F(0o644, "deleted\n"),
	"typechg":     F(0o644, "becomes a link\n"),
	"caf\xe9.txt": F(0o644, "a latin-1 name\n"),
	"keep/k.txt":  F(0o644, "unchanged\n"),
}

// diffEdits makes, in dir, one change of every kind a patch carries.
func diffEdits(t *testing.T, dir string) {
	t.Helper()
	p := func(rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }
	lines := numbered("text", 12)
	lines[1], lines[8] = "text line 2, edited", "text line 9, edited"
	writeFile(t, p("text.txt"), strings.Join(lines, "\n")) // and no final newline
	writeFile(t, p("bin.dat"), "\x00\x01\x02\x03 binary \xff\xfe\x00 new and longer\x00\x00")
	must(t, os.Chmod(p("script.sh"), 0o755))
	writeFile(t, p("both.sh"), "echo new\n")
	must(t, os.Chmod(p("both.sh"), 0o755))
	must(t, os.Remove(p("link")))
	must(t, os.Symlink("bin.dat", p("link")))
	must(t, os.Symlink("dir/sub/new.txt", p("newlink")))
	must(t, os.Remove(p("gone.txt")))
	mkdirAll(t, p("dir/sub"))
	writeFile(t, p("dir/sub/new.txt"), "a new nested file\n")
	must(t, os.Remove(p("typechg")))
	must(t, os.Symlink("text.txt", p("typechg")))
	writeFile(t, p("caf\xe9.txt"), "a latin-1 name, edited\n")
	writeFile(t, p("ni\xf1o.txt"), "another latin-1 name\n")
	writeFile(t, p("new.bin"), "\x00\xff\x00\xfe new binary")
}

// TestE2EDiffGitApply: `git apply --binary` of `airlock diff` on a copy of
// the base reproduces the staged tree, for an open and a refused
// transaction; --stat and --name-status match git's.
func TestE2EDiffGitApply(t *testing.T) {
	x := newH(t)
	build(t, x.base, diffBase)
	before := snapshot(t, x.base, nil)
	staged := map[string]string{"open1": x.openTx("open1"), "refused1": x.openTx("refused1", "--protect", "bin.dat")}
	for _, s := range staged {
		diffEdits(t, s)
	}
	r := x.airlock("commit", "refused1")
	wantCode(t, r, 75)
	wantBlock(t, r, map[string]string{"refusal": "ProtectedPathNotApproved", "refused_paths": "bin.dat"})
	wantTree(t, "base after the refusal", before, snapshot(t, x.base, nil))

	for _, id := range []string{"open1", "refused1"} {
		t.Run(id, func(t *testing.T) {
			r := x.airlock("diff", id)
			wantCode(t, r, 0)
			if r.Stderr != "" {
				t.Errorf("diff printed on stderr:\n%s", r.Stderr)
			}
			dir := copyTree(t, x.base)
			x.sh(dir, []byte(r.Stdout), "git", "apply", "--binary", "-")
			wantTree(t, "copy of the base after git apply --binary vs the staged tree", snapshot(t, staged[id], nil), snapshot(t, dir, nil))
		})
	}

	// The same change in a git repository: git's --stat and --name-status.
	repo := copyTree(t, x.base)
	x.sh(repo, nil, "git", "init", "-q")
	x.sh(repo, nil, "git", "add", "-A")
	x.sh(repo, nil, "git", "commit", "-qm", "base")
	diffEdits(t, repo)
	x.sh(repo, nil, "git", "add", "-A")
	for _, flag := range []string{"--name-status", "--stat"} {
		t.Run(flag, func(t *testing.T) {
			want := x.sh(repo, nil, "git", "diff", "--cached", "--no-renames", flag)
			for _, id := range []string{"open1", "refused1"} {
				r := x.airlock("diff", id, flag)
				wantCode(t, r, 0)
				if r.Stdout != want {
					t.Errorf("airlock diff %s %s:\n%s\ngit diff --cached --no-renames %s:\n%s", id, flag, r.Stdout, flag, want)
				}
			}
		})
	}
}

// --- 4. validation on candidates ---

// TestE2EValidate: each transaction is validated on its exact candidate;
// a failing validator refuses ValidationFailed and keeps its output; what
// the validator writes never lands; a base change during validation
// refuses BaseDrift.
func TestE2EValidate(t *testing.T) {
	t.Run("land: A lands, B refused", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{"f.txt": F(0o644, text(numbered("f", 4)))})
		want := snapshot(t, x.base, nil)
		sa, sb := x.openTx("A"), x.openTx("B")
		editLines(t, filepath.Join(sa, "f.txt"), map[int]string{2: "edited by A"})
		want["f.txt"] = F(0o644, "f line 1\nedited by A\nf line 3\nf line 4\n")
		writeFile(t, filepath.Join(sb, "bad"), "B adds a bad file\n")
		validator := `echo "validating $AIRLOCK_TX"; echo junk > validator-junk.txt; test ! -e bad`
		r, blocks := x.airlockMulti("land", "A", "B", "--validate", validator)
		wantCode(t, r, 75)
		if got, w := summary(r.Stdout), []string{"landed A", "refused B"}; !eq(got, w) {
			t.Errorf("land summary %q, want %q\n%s", got, w, r)
		}
		if len(blocks) != 2 || blocks[1]["refusal"] != "ValidationFailed" || blocks[1]["outcome"] != "refused" {
			t.Errorf("blocks %v, want B refused ValidationFailed\n%s", blocks, r)
		}
		wantTree(t, "base after land --validate", want, snapshot(t, x.base, nil))
		logPath := filepath.Join(x.state, "tx", "B", "validate.log")
		if got := testbin.ReadFile(t, logPath); !strings.Contains(got, "validating B") {
			t.Errorf("%s = %q, want the validator's output", logPath, got)
		}
		if r := x.airlock("show", "B"); !strings.Contains(r.Stdout, "refusal:   ValidationFailed") {
			t.Errorf("show B does not say ValidationFailed\n%s", r)
		}
		if !testbin.Exists(filepath.Join(sb, "bad")) {
			t.Errorf("the refused transaction's staged tree lost its change")
		}
	})

	t.Run("passes on one candidate, fails on another", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{"items/base": F(0o644, "base\n"), "f.txt": F(0o644, text(numbered("f", 8)))})
		sync := testbin.RealDir(t)
		ids := []string{"A", "B", "C"}
		want := snapshot(t, x.base, nil)
		lines := numbered("f", 8)
		for i, id := range ids {
			s := x.openTx(id)
			writeFile(t, filepath.Join(s, "items", id), id+"\n")
			editLines(t, filepath.Join(s, "f.txt"), map[int]string{1 + 3*i: "edited by " + id})
			if id != "C" {
				want["items/"+id] = F(0o644, id+"\n")
				lines[3*i] = "edited by " + id
			}
		}
		want["f.txt"] = F(0o644, text(lines))
		// Each transaction alone passes (two items); A+B passes (three);
		// A+B+C does not (four). The candidate is copied out for the test.
		validator := `cp -a . "$SYNC/$AIRLOCK_TX" && test "$(ls items | wc -l)" -le 3`
		p := x.start(run{env: []string{"SYNC=" + sync}, args: []string{"land", "--quiet", "A", "B", "C", "--validate", validator}})
		r := p.WaitSettled()
		wantCode(t, r, 75)
		if got, w := summary(r.Stdout), []string{"landed A", "landed B", "refused C"}; !eq(got, w) {
			t.Errorf("land summary %q, want %q\n%s", got, w, r)
		}
		got := snapshot(t, x.base, nil)
		wantTree(t, "base after land", want, got)
		// The tree B was validated on is the tree that landed.
		wantTree(t, "B's candidate vs the base it became", got, snapshot(t, filepath.Join(sync, "B"), nil))
		cand := snapshot(t, filepath.Join(sync, "C"), nil)
		for _, id := range ids {
			if _, ok := cand["items/"+id]; !ok {
				t.Errorf("C's candidate has no items/%s: it was not the base after A and B plus C", id)
			}
		}
		if c := cand["f.txt"].Content; !strings.Contains(c, "edited by A") || !strings.Contains(c, "edited by B") || !strings.Contains(c, "edited by C") {
			t.Errorf("C's candidate f.txt is not the merge of A, B and C:\n%s", c)
		}
		if got := testbin.ReadFile(t, filepath.Join(x.state, "tx", "C", "validate.log")); got != "" {
			t.Logf("C's validate.log: %q", got)
		}
		r = x.airlock("commit", "C")
		wantCode(t, r, 0)
		want["items/C"] = F(0o644, "C\n")
		lines[6] = "edited by C"
		want["f.txt"] = F(0o644, text(lines))
		wantTree(t, "base after committing C without the validator", want, snapshot(t, x.base, nil))
	})

	t.Run("base changes during validation", func(t *testing.T) {
		for _, touched := range []bool{true, false} {
			name := map[bool]string{true: "a touched path: BaseDrift", false: "another path: commits"}[touched]
			t.Run(name, func(t *testing.T) {
				x := newH(t)
				build(t, x.base, tree{"f.txt": F(0o644, "f\n"), "g.txt": F(0o644, "g\n")})
				sync := testbin.RealDir(t)
				s := x.openTx("A")
				writeFile(t, filepath.Join(s, "f.txt"), "f by A\n")
				validator := `: > "$SYNC/ready"; while [ ! -e "$SYNC/go" ]; do sleep 0.01; done`
				p := x.start(run{env: []string{"SYNC=" + sync}, args: []string{"commit", "A", "--validate", validator}})
				releaseAtEnd(t, sync)
				waitFile(t, filepath.Join(sync, "ready"))
				edited := map[bool]string{true: "f.txt", false: "g.txt"}[touched]
				writeFile(t, filepath.Join(x.base, edited), "the user's edit during validation\n")
				want := snapshot(t, x.base, nil)
				touch(t, filepath.Join(sync, "go"))
				r := p.WaitSettled()
				if touched {
					wantCode(t, r, 75)
					wantBlock(t, r, map[string]string{"tx": "A", "outcome": "refused", "refusal": "BaseDrift", "refused_paths": "f.txt"})
				} else {
					wantCode(t, r, 0)
					wantBlock(t, r, map[string]string{"tx": "A", "outcome": "committed"})
					want["f.txt"] = F(0o644, "f by A\n")
				}
				wantTree(t, "base after validation", want, snapshot(t, x.base, nil))
			})
		}
	})
}

// --- 5. undo and log ---

var undoBase = tree{
	"mod.txt":  F(0o644, "old\n"),
	"del.txt":  F(0o644, "bye\n"),
	"exe.sh":   F(0o644, "#!/bin/sh\n"),
	"link":     L("mod.txt"),
	"dir/keep": F(0o600, "k\n"),
	"bin":      F(0o644, "\x00\x01\x02"),
	"g.txt":    F(0o644, "g\n"),
}

const undoScript = `set -e
printf 'new\n' > mod.txt
rm del.txt
chmod +x exe.sh
rm link && ln -s del.txt link
ln -s nowhere newlink
mkdir -p add/deep && printf 'a' > add/deep/a.txt
printf '\000\377' > bin
chmod 0640 dir/keep
`

// TestE2EUndo: undo restores the exact prior bytes; an older commit whose
// paths changed since is refused; log lists commits newest first and says
// when the chain is broken.
func TestE2EUndo(t *testing.T) {
	t.Run("newest", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, undoBase)
		before := snapshot(t, x.base, nil)
		after := x.oracle(undoScript)
		wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "c1", "--", "sh", "-c", undoScript), 0)
		wantTree(t, "base after the commit", after, snapshot(t, x.base, nil))
		r := x.airlock("undo", "--workdir", x.base)
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "committed"})
		wantTree(t, "base after undo", before, snapshot(t, x.base, nil))
		undoID := r.Settle["tx"]
		if got, w := x.logIDs(), []string{undoID, "c1"}; !eq(got, w) {
			t.Errorf("log lists %q, want %q", got, w)
		}
		r = x.airlock("log", "--workdir", x.base, "--json")
		wantCode(t, r, 0)
		var lg struct {
			Base    string `json:"base"`
			Broken  string `json:"broken"`
			Entries []struct {
				TX       string   `json:"tx"`
				Command  []string `json:"command"`
				Digest   string   `json:"digest"`
				Previous string   `json:"previous"`
			} `json:"entries"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &lg); err != nil {
			t.Fatalf("log --json: %v\n%s", err, r)
		}
		if lg.Base != x.base || lg.Broken != "" || len(lg.Entries) != 2 || lg.Entries[0].TX != undoID || lg.Entries[1].TX != "c1" ||
			lg.Entries[0].Previous != lg.Entries[1].Digest || lg.Entries[1].Previous != "" {
			t.Errorf("log --json: %+v", lg)
		}
		if len(lg.Entries) == 2 && !eq(lg.Entries[0].Command, []string{"airlock", "undo", "c1"}) {
			t.Errorf("the undo's receipt has command %q", lg.Entries[0].Command)
		}
		// Undoing the undo brings the commit back.
		r = x.airlock("undo", "--workdir", x.base)
		wantCode(t, r, 0)
		wantTree(t, "base after undoing the undo", after, snapshot(t, x.base, nil))
	})

	t.Run("older commit", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, undoBase)
		before := snapshot(t, x.base, nil)
		wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "c1", "--", "sh", "-c", undoScript), 0)
		wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "c2", "--", "sh", "-c", `printf 'g by c2\n' > g.txt`), 0)
		wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "c3", "--", "sh", "-c", `printf 'newer\n' > mod.txt`), 0)
		now := snapshot(t, x.base, nil)
		r := x.airlock("undo", "c1", "--workdir", x.base)
		wantCode(t, r, 75)
		if !strings.Contains(r.Stderr, "mod.txt") {
			t.Errorf("the refused undo does not name mod.txt\n%s", r)
		}
		if r.Settle != nil && r.Settle["refused_paths"] != "mod.txt" {
			t.Errorf("airlock.refused_paths=%q, want mod.txt", r.Settle["refused_paths"])
		}
		wantTree(t, "base after the refused undo", now, snapshot(t, x.base, nil))

		// c2 touched only g.txt, which nothing changed since: it undoes.
		r = x.airlock("undo", "c2", "--workdir", x.base)
		wantCode(t, r, 0)
		now["g.txt"] = before["g.txt"]
		wantTree(t, "base after undoing c2", now, snapshot(t, x.base, nil))
	})

	t.Run("broken chain", func(t *testing.T) {
		x := newH(t)
		build(t, x.base, tree{"f": F(0o644, "0\n")})
		for _, id := range []string{"c1", "c2", "c3"} {
			wantCode(t, x.airlock("run", "--workdir", x.base, "--id", id, "--", "sh", "-c", "echo "+id+" > f"), 0)
		}
		if got, w := x.logIDs(), []string{"c3", "c2", "c1"}; !eq(got, w) {
			t.Fatalf("log lists %q, want %q", got, w)
		}
		rc := x.airlock("show", "c1", "--json")
		var in struct {
			Receipt string `json:"receipt"`
		}
		must(t, json.Unmarshal([]byte(rc.Stdout), &in))
		var c1 struct {
			Digest string `json:"digest"`
		}
		must(t, json.Unmarshal([]byte(testbin.ReadFile(t, in.Receipt)), &c1))
		chained, err := filepath.Glob(filepath.Join(x.state, "bases", "*", "receipts", strings.TrimPrefix(c1.Digest, "sha256:")+".json"))
		if err != nil || len(chained) != 1 {
			t.Fatalf("c1's receipt in the chain: %v %v", chained, err)
		}
		data := testbin.ReadFile(t, chained[0])
		tampered := strings.Replace(data, `"added": 0`, `"added": 1`, 1)
		if tampered == data {
			tampered = strings.Replace(data, `"modified": 1`, `"modified": 2`, 1)
		}
		if tampered == data {
			t.Fatalf("could not tamper with %s:\n%s", chained[0], data)
		}
		must(t, os.WriteFile(chained[0], []byte(tampered), 0o600))
		r := x.airlock("log", "--workdir", x.base)
		if r.Code == 0 || !strings.Contains(r.Stderr, "broken") {
			t.Errorf("log over a tampered chain: want a non-zero exit saying the chain is broken\n%s", r)
		}
		var listed []string
		for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			if f := strings.Fields(l); len(f) >= 3 {
				listed = append(listed, f[2])
			}
		}
		if !eq(listed, []string{"c3", "c2"}) {
			t.Errorf("log over a chain broken at c1 should list c3 and c2 only\n%s", r)
		}
		r = x.airlock("log", "--workdir", x.base, "--json")
		var lg struct {
			Broken  string            `json:"broken"`
			Entries []json.RawMessage `json:"entries"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &lg); err != nil || lg.Broken == "" || len(lg.Entries) != 2 {
			t.Errorf("log --json over a tampered chain: broken=%q, %d entries (%v)\n%s", lg.Broken, len(lg.Entries), err, r)
		}
		if r.Code == 0 {
			t.Errorf("log --json over a broken chain exits 0; a script cannot tell it is broken without reading the JSON")
		}
	})
}

// --- 6. gc ---

// TestE2EGC: gc removes settled transactions only, keeps what is still
// needed, and a transaction still open merges after it.
func TestE2EGC(t *testing.T) {
	x := newH(t)
	lines := numbered("f", 10)
	build(t, x.base, tree{"f.txt": F(0o644, text(lines)), "p.txt": F(0o644, "p\n")})
	sync := testbin.RealDir(t)

	// alive: a run whose command waits; its owner is alive throughout.
	alive := x.start(run{env: []string{"SYNC=" + sync}, args: []string{"run", "--workdir", x.base, "--id", "alive", "--",
		"sh", "-c", `echo alive > alive.txt; : > "$SYNC/ready"; while [ ! -e "$SYNC/go" ]; do sleep 0.01; done`}})
	releaseAtEnd(t, sync)
	waitFile(t, filepath.Join(sync, "ready"))
	// pending: open over the base before "early" commits an edit of f.txt.
	sp := x.openTx("pending")
	se := x.openTx("early")
	editLines(t, filepath.Join(se, "f.txt"), map[int]string{2: "f line 2 by early"})
	wantCode(t, x.airlock("commit", "early"), 0)
	editLines(t, filepath.Join(sp, "f.txt"), map[int]string{9: "f line 9 by pending"})
	// refused: a protected path without approval.
	sr := x.openTx("refused", "--protect", "p.txt")
	writeFile(t, filepath.Join(sr, "p.txt"), "p by refused\n")
	wantCode(t, x.airlock("commit", "refused"), 75)
	// settled ones.
	wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "committed1", "--", "sh", "-c", "echo c > c.txt"), 0)
	x.openTx("discarded1")
	wantCode(t, x.airlock("discard", "discarded1"), 0)
	// orphan: open, its owner (airlock open) gone, with a change (without
	// one it would be abandoned, and gc would remove it:
	// TestE2EGCRemovesAbandoned).
	so := x.openTx("orphan")
	writeFile(t, filepath.Join(so, "orphan.txt"), "work in progress\n")

	txDirs := func() []string {
		ents, err := os.ReadDir(filepath.Join(x.state, "tx"))
		must(t, err)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	all := []string{"alive", "committed1", "discarded1", "early", "orphan", "pending", "refused"}
	if got := txDirs(); !eq(got, all) {
		t.Fatalf("state holds %q, want %q", got, all)
	}

	stateBefore := snapshot(t, x.state, nil)
	r := x.airlock("gc", "--dry-run", "--older-than", "0")
	wantCode(t, r, 0)
	for _, id := range []string{"committed1", "discarded1", "early"} {
		if !strings.Contains(r.Stdout, "would remove "+id) {
			t.Errorf("gc --dry-run --older-than 0 does not say it would remove %s\n%s", id, r)
		}
	}
	// The commits lose their undo; the discard had none.
	for id, lost := range map[string]bool{"committed1": true, "early": true, "discarded1": false} {
		line := regexp.MustCompile(`(?m)^would remove ` + id + ` .*$`).FindString(r.Stdout)
		if got := strings.Contains(line, "its undo would be lost"); got != lost {
			t.Errorf("gc --dry-run --older-than 0 on %s: says its undo would be lost = %v, want %v\n%s", id, got, lost, r)
		}
	}
	wantTree(t, "state after gc --dry-run", stateBefore, snapshot(t, x.state, nil))

	// A plain gc keeps every settled one for its grace (7 days here).
	r = x.airlock("gc")
	wantCode(t, r, 0)
	if got := txDirs(); !eq(got, all) {
		t.Errorf("a plain gc removed transactions within their grace: state holds %q\n%s", got, r)
	}
	if !strings.Contains(r.Stdout, "kept 3 settled transactions") || !strings.Contains(r.Stdout, "freed 0 B") {
		t.Errorf("a plain gc does not say it kept the three settled transactions for their grace\n%s", r)
	}

	r = x.airlock("gc", "--older-than", "1h")
	wantCode(t, r, 0)
	if got := txDirs(); !eq(got, all) {
		t.Errorf("gc --older-than 1h removed recent transactions: state holds %q\n%s", got, r)
	}
	if !strings.Contains(r.Stdout, "freed 0 B") {
		t.Errorf("gc --older-than 1h should free nothing\n%s", r)
	}

	r = x.airlock("gc", "--older-than", "0")
	wantCode(t, r, 0)
	if got, w := txDirs(), []string{"alive", "orphan", "pending", "refused"}; !eq(got, w) {
		t.Errorf("after gc --older-than 0 the state holds %q, want %q\n%s", got, w, r)
	}
	if !strings.Contains(r.Stdout, "removed committed1 (committed, ") || !strings.Contains(r.Stdout, "it can no longer be undone") {
		t.Errorf("gc --older-than 0 does not say committed1 can no longer be undone\n%s", r)
	}
	m := regexp.MustCompile(`(?m)^freed ([0-9.]+) (B|KiB|MiB)$`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Errorf("gc does not report the bytes it freed\n%s", r)
	} else if n, _ := strconv.ParseFloat(m[1], 64); n <= 0 {
		t.Errorf("gc freed %s %s after removing three transactions\n%s", m[1], m[2], r)
	}

	// Named: an alive owner is still kept, a refused one goes.
	r = x.airlock("gc", "alive", "refused")
	wantCode(t, r, 0)
	if got, w := txDirs(), []string{"alive", "orphan", "pending"}; !eq(got, w) {
		t.Errorf("after gc alive refused the state holds %q, want %q\n%s", got, w, r)
	}

	// A gc'd commit cannot be undone, and says so.
	r = x.airlock("undo", "committed1", "--workdir", x.base)
	wantCode(t, r, 125)
	oneLine(t, r, "committed1", "gc", "can no longer be undone")
	if !strings.Contains(r.Stderr, "committed1") {
		t.Errorf("undo of a gc'd transaction does not name it\n%s", r)
	}
	if testbin.Exists(filepath.Join(x.base, "c.txt")) == false {
		t.Errorf("the failed undo touched the base")
	}

	// pending still merges with the commit gc'd before it.
	r = x.airlock("commit", "pending")
	wantCode(t, r, 0)
	lines[1], lines[8] = "f line 2 by early", "f line 9 by pending"
	if got := testbin.ReadFile(t, filepath.Join(x.base, "f.txt")); got != text(lines) {
		t.Errorf("f.txt after committing pending:\n%s\nwant:\n%s", got, text(lines))
	}
	touch(t, filepath.Join(sync, "go"))
	r = alive.WaitSettled()
	wantCode(t, r, 0)
	if got := testbin.ReadFile(t, filepath.Join(x.base, "alive.txt")); got != "alive\n" {
		t.Errorf("alive.txt = %q", got)
	}
}

// TestE2EGCKeepsUndo: gc of one commit keeps what another still needs to
// be undone.
func TestE2EGCKeepsUndo(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f.txt": F(0o644, "f at first\n"), "g.txt": F(0o644, "g\n")})
	before := snapshot(t, x.base, nil)
	wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "c1", "--", "sh", "-c", "echo 'f by c1' > f.txt; chmod +x f.txt"), 0)
	wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "c2", "--", "sh", "-c", "echo 'g by c2' > g.txt"), 0)
	r := x.airlock("gc", "c2")
	wantCode(t, r, 0)
	if testbin.Exists(filepath.Join(x.state, "tx", "c2")) || !testbin.Exists(filepath.Join(x.state, "tx", "c1")) {
		t.Fatalf("gc c2 should remove c2 and only c2\n%s", r)
	}
	r = x.airlock("undo", "c1", "--workdir", x.base)
	wantCode(t, r, 0)
	want := cloneTree(before)
	want["g.txt"] = F(0o644, "g by c2\n")
	wantTree(t, "base after undoing c1", want, snapshot(t, x.base, nil))

	// With every transaction gone, undo (the newest in the log) says why
	// it cannot.
	wantCode(t, x.airlock("gc", "--older-than", "0"), 0)
	r = x.airlock("undo", "--workdir", x.base)
	wantCode(t, r, 125)
	oneLine(t, r, "gc", "can no longer be undone")
	wantTree(t, "base after the failed undo", want, snapshot(t, x.base, nil))
}

// --- 7. racing commits ---

// TestE2ERacingCommits: two `airlock commit` processes started together
// over one base both end correctly, and the base is never a mix.
func TestE2ERacingCommits(t *testing.T) {
	const files = 6
	setup := func(t *testing.T) (*h, tree, map[string]string) {
		x := newH(t)
		spec := tree{"f.txt": F(0o644, text(numbered("f", 10)))}
		for i := range files {
			spec[fmt.Sprintf("A/%02d", i)] = F(0o644, "base\n")
			spec[fmt.Sprintf("B/%02d", i)] = F(0o644, "base\n")
		}
		build(t, x.base, spec)
		before := snapshot(t, x.base, nil)
		staged := map[string]string{"A": x.openTx("A"), "B": x.openTx("B")}
		for id, s := range staged {
			for i := range files {
				writeFile(t, filepath.Join(s, id, fmt.Sprintf("%02d", i)), "edited by "+id+"\n")
			}
		}
		return x, before, staged
	}
	race := func(x *h) (result, result) {
		pa := x.start(run{args: []string{"commit", "A"}})
		pb := x.start(run{args: []string{"commit", "B"}})
		return pa.WaitSettled(), pb.WaitSettled()
	}
	ownFiles := func(want tree, id string) {
		for i := range files {
			want[fmt.Sprintf("%s/%02d", id, i)] = F(0o644, "edited by "+id+"\n")
		}
	}

	for round := range 2 {
		t.Run(fmt.Sprintf("different files %d", round), func(t *testing.T) {
			x, want, _ := setup(t)
			ra, rb := race(x)
			wantCode(t, ra, 0)
			wantCode(t, rb, 0)
			ownFiles(want, "A")
			ownFiles(want, "B")
			wantTree(t, "base after both commits", want, snapshot(t, x.base, nil))
		})
		t.Run(fmt.Sprintf("different lines of one file %d", round), func(t *testing.T) {
			x, want, staged := setup(t)
			lines := numbered("f", 10)
			editLines(t, filepath.Join(staged["A"], "f.txt"), map[int]string{2: "by A"})
			editLines(t, filepath.Join(staged["B"], "f.txt"), map[int]string{8: "by B"})
			ra, rb := race(x)
			wantCode(t, ra, 0)
			wantCode(t, rb, 0)
			ownFiles(want, "A")
			ownFiles(want, "B")
			lines[1], lines[7] = "by A", "by B"
			want["f.txt"] = F(0o644, text(lines))
			wantTree(t, "base after both commits", want, snapshot(t, x.base, nil))
		})
		t.Run(fmt.Sprintf("same line %d", round), func(t *testing.T) {
			x, before, staged := setup(t)
			for _, id := range []string{"A", "B"} {
				editLines(t, filepath.Join(staged[id], "f.txt"), map[int]string{5: "line 5 by " + id})
			}
			ra, rb := race(x)
			winner, loser := "A", rb
			if ra.Code != 0 {
				winner, loser = "B", ra
				wantCode(t, rb, 0)
			}
			wantCode(t, loser, 75)
			wantBlock(t, loser, map[string]string{"outcome": "refused", "refusal": "MergeConflict", "refused_paths": "f.txt"})
			want := cloneTree(before)
			ownFiles(want, winner)
			lines := numbered("f", 10)
			lines[4] = "line 5 by " + winner
			want["f.txt"] = F(0o644, text(lines))
			wantTree(t, "base after the race (the winner's change exactly)", want, snapshot(t, x.base, nil))
		})
	}
}

// --- 8. ports ---

// TestE2EPorts: open transactions hold port blocks that do not overlap,
// and a run's command sees its own in AIRLOCK_PORT_BASE.
func TestE2EPorts(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	sync := testbin.RealDir(t)
	x.openTx("held")
	var procs []proc
	for _, id := range []string{"r1", "r2"} {
		procs = append(procs, x.start(run{env: []string{"SYNC=" + sync}, args: []string{"run", "--workdir", x.base, "--id", id, "--",
			"sh", "-c", `echo "$AIRLOCK_TX $AIRLOCK_PORT_BASE"; echo "$AIRLOCK_PORT_BASE" > "$SYNC/$AIRLOCK_TX.tmp"; mv "$SYNC/$AIRLOCK_TX.tmp" "$SYNC/$AIRLOCK_TX"; while [ ! -e "$SYNC/go" ]; do sleep 0.01; done`}}))
	}
	releaseAtEnd(t, sync)
	for _, id := range []string{"r1", "r2"} {
		waitFile(t, filepath.Join(sync, id))
	}
	ports := map[string]int{}
	for _, e := range x.listJSON() {
		ports[e.ID] = e.PortBase
	}
	for _, id := range []string{"r1", "r2"} {
		seen, _ := strconv.Atoi(strings.TrimSpace(testbin.ReadFile(t, filepath.Join(sync, id))))
		if seen == 0 || seen != ports[id] {
			t.Errorf("%s: its command saw AIRLOCK_PORT_BASE=%d, list says %d", id, seen, ports[id])
		}
	}
	if len(ports) != 3 {
		t.Fatalf("list shows %v, want held, r1 and r2", ports)
	}
	for a, pa := range ports {
		for b, pb := range ports {
			if a < b && pa < pb+10 && pb < pa+10 {
				t.Errorf("port blocks of %s (%d) and %s (%d) overlap", a, pa, b, pb)
			}
		}
		if pa <= 0 {
			t.Errorf("%s has port base %d", a, pa)
		}
	}
	touch(t, filepath.Join(sync, "go"))
	for _, p := range procs {
		r := p.WaitSettled()
		wantCode(t, r, 0)
		wantBlock(t, r, map[string]string{"outcome": "no_changes"})
		if !regexp.MustCompile(`^r[12] [0-9]+\n$`).MatchString(r.Stdout) {
			t.Errorf("the command printed %q", r.Stdout)
		}
	}
}

// TestE2ERawSelectors: a protected selector that is not valid UTF-8 still
// protects when the commit runs in another process than the open (the
// open record keeps its bytes).
func TestE2ERawSelectors(t *testing.T) {
	x := newH(t)
	name := "caf\xe9.txt"
	build(t, x.base, tree{name: F(0o644, "before\n"), "other": F(0o644, "o\n")})
	before := snapshot(t, x.base, nil)
	s := x.openTx("raw", "--protect", name, "--exclude", "other")
	writeFile(t, filepath.Join(s, name), "edited\n")
	r := x.airlock("commit", "raw")
	wantCode(t, r, 75)
	wantBlock(t, r, map[string]string{"refusal": "ProtectedPathNotApproved"})
	wantTree(t, "base after the refusal", before, snapshot(t, x.base, nil))
	r = x.airlock("show", "raw", "--json")
	wantCode(t, r, 0)
	var in struct {
		Protect []json.RawMessage `json:"protect"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &in))
	var last bytes.Buffer
	if n := len(in.Protect); n == 0 || json.Compact(&last, in.Protect[n-1]) != nil || last.String() != `{"base64":"Y2Fm6S50eHQ="}` {
		t.Errorf("show --json protect = %s, want the selector's bytes last", in.Protect)
	}
	r = x.airlock("commit", "raw", "--approve")
	wantCode(t, r, 0)
	want := cloneTree(before)
	want[name] = F(0o644, "edited\n")
	wantTree(t, "base after the approved commit", want, snapshot(t, x.base, nil))
}
