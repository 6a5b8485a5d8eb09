package main_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The outside review of checkpoint, checkpoints and rewind (attack11):
// each test drives the real binary as a user, an agent (which controls
// the staged tree) or a hostile same-user process would, and holds one
// guarantee. The five the review found broken (a tampered object, a
// rewritten record, another session's hook, another commit over an
// untouched file, the human editing the base) were fixed, and their tests
// are here.

// attack11Object is the path of content's object in the base's content
// store.
func attack11Object(t *testing.T, x *h, content string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(content))
	ms, err := filepath.Glob(filepath.Join(x.state, "bases", "*", "originals", "objects", hex.EncodeToString(sum[:])))
	if err != nil || len(ms) != 1 {
		t.Fatalf("the content store holds %d objects of %q (%v)", len(ms), content, err)
	}
	return ms[0]
}

// attack11Diff is the transaction's change set as a patch, the oracle a
// rewind's result is compared with.
func attack11Diff(t *testing.T, x *h, id string) string {
	t.Helper()
	r := x.airlock("diff", id)
	wantCode(t, r, 0)
	return r.Stdout
}

// attack11Record reads checkpoint n's record as generic JSON, for a test
// that plays a process rewriting it.
func attack11Record(t *testing.T, x *h, id string, n int) (string, map[string]any) {
	t.Helper()
	p := filepath.Join(x.state, "tx", id, "checkpoint-"+itoa(n)+".json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Numbers stay as written: a float64 would round the nanosecond
	// stamps, and the rewind would refuse for that instead.
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var rec map[string]any
	if err := d.Decode(&rec); err != nil {
		t.Fatal(err)
	}
	return p, rec
}

// attack11Changes is the list of changes in a record read by attack11Record.
func attack11Changes(t *testing.T, rec map[string]any) []map[string]any {
	t.Helper()
	set, _ := rec["set"].(map[string]any)
	list, _ := set["changes"].([]any)
	var out []map[string]any
	for _, c := range list {
		out = append(out, c.(map[string]any))
	}
	if len(out) == 0 {
		t.Fatalf("checkpoint record holds no changes: %v", rec)
	}
	return out
}

func attack11Write(t *testing.T, p string, rec map[string]any) {
	t.Helper()
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAttack11RewindRestoresEveryKindExactly: checkpoint 1 holds every
// kind of change an agent makes (a non-UTF-8 name, a name with a newline,
// an exec bit, a symlink out of the tree, an empty directory, a deep new
// tree, a read-only directory, a file the base has that the tx deleted, a
// file that became a directory, a directory that became a file, a large
// file); the agent then turns each into another kind. Rewind 1 makes the
// tree exactly checkpoint 1's and the diff the diff at checkpoint time;
// rewinding to the checkpoint the rewind took undoes it exactly; the base
// is never touched.
func TestAttack11RewindRestoresEveryKindExactly(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{
		"a.txt": F(0o644, "a\n"), "gone.txt": F(0o644, "the base keeps me\n"),
		"d": D(0o755), "d/c.txt": F(0o644, "c\n"), "f2d": F(0o644, "a file at open\n"),
	})
	base := snapshot(t, x.base, nil)
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	large := strings.Repeat("0123456789abcdef", 1<<19) // 8 MiB
	build(t, staged, tree{
		"bad\xff.txt": F(0o644, "not UTF-8\n"), "new\nline": F(0o600, "newline\n"),
		"deep/e/f/g/z.txt": F(0o644, "deep\n"), "emptyd": D(0o755), "lnk": L("/etc"),
		"ro": D(0o555), "ro/in.txt": F(0o444, "read-only\n"), "big.bin": F(0o644, large),
	})
	if err := os.Chmod(filepath.Join(staged, "a.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(filepath.Join(staged, "gone.txt")))
	must(t, os.RemoveAll(filepath.Join(staged, "d")))
	writeFile(t, filepath.Join(staged, "d"), "a directory at open\n")
	must(t, os.Remove(filepath.Join(staged, "f2d")))
	build(t, staged, tree{"f2d/x.txt": F(0o644, "under a former file\n")})
	wantCode(t, x.airlock("checkpoint", "t1", "-m", "every kind"), 0)
	at1, diff1 := snapshot(t, staged, nil), attack11Diff(t, x, "t1")

	// The agent turns each into another kind.
	must(t, os.Chmod(filepath.Join(staged, "ro"), 0o755))
	for _, p := range []string{"bad\xff.txt", "new\nline", "deep", "emptyd", "lnk", "ro", "big.bin", "d", "f2d", "a.txt"} {
		must(t, os.RemoveAll(filepath.Join(staged, p)))
	}
	build(t, staged, tree{
		"bad\xff.txt": D(0o700), "new\nline": L("../../outside"), "deep": F(0o644, "flat\n"),
		"emptyd": L("/"), "lnk": D(0o755), "lnk/passwd": F(0o600, "planted\n"), "ro": F(0o777, "now a file\n"),
		"big.bin": F(0o644, large[:len(large)-1]+"X"), "d": L("/tmp"), "f2d": F(0o644, "a file again\n"),
		"gone.txt": F(0o644, "the base keeps me, and the agent\n"), "a.txt": F(0o644, "a, not exec\n"),
	})
	before, diffBefore := snapshot(t, staged, nil), attack11Diff(t, x, "t1")

	r := x.airlock("rewind", "t1", "1")
	wantCode(t, r, 0)
	if !strings.Contains(r.Stderr, "checkpoint 2 holds what was there") {
		t.Errorf("rewind said:\n%s", r.Stderr)
	}
	wantTree(t, "staged after rewind 1", at1, snapshot(t, staged, nil))
	if got := attack11Diff(t, x, "t1"); got != diff1 {
		t.Errorf("diff after the rewind is not the diff at checkpoint 1:\n%s\nwant:\n%s", got, diff1)
	}
	wantCode(t, x.airlock("rewind", "t1", "2"), 0)
	wantTree(t, "staged after undoing the rewind", before, snapshot(t, staged, nil))
	if got := attack11Diff(t, x, "t1"); got != diffBefore {
		t.Errorf("diff after undoing the rewind differs:\n%s\nwant:\n%s", got, diffBefore)
	}
	wantTree(t, "base", base, snapshot(t, x.base, nil))
}

// TestAttack11RewindFollowsNoSymlinkPlantedMidway: after the rewind has
// recorded the tree, the agent swaps a directory the rewind writes under
// for a symlink to a directory outside. The rewind fails naming the
// symlink and writes nothing outside the staged tree; the base is
// untouched.
func TestAttack11RewindFollowsNoSymlinkPlantedMidway(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"d": D(0o755), "d/c.txt": F(0o644, "c\n")})
	base := snapshot(t, x.base, nil)
	outside := testbin.RealDir(t)
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "d/new.txt"), "new\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	must(t, os.Remove(filepath.Join(staged, "d/new.txt")))

	pause := testbin.RealDir(t)
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=rewind-checkpointed:" + pause}, args: []string{"rewind", "t1", "1"}})
	waitFile(t, filepath.Join(pause, "reached"))
	must(t, os.Rename(filepath.Join(staged, "d"), filepath.Join(staged, "d.real")))
	must(t, os.Symlink(outside, filepath.Join(staged, "d")))
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	if r.Code != 125 || !strings.Contains(r.Stderr, `refusing to follow a symlink at "d"`) {
		t.Fatalf("a rewind under a planted symlink: exit %d\n%s", r.Code, r.Stderr)
	}
	wantTree(t, "outside", tree{}, snapshot(t, outside, nil))
	wantTree(t, "base", base, snapshot(t, x.base, nil))
}

// TestAttack11RewindRefusesEscapingNamesInARecord: a same-user process
// rewrites a checkpoint's record so that a change names "../escape.txt"
// or an absolute path. The rewind refuses, and nothing appears outside
// the staged tree.
func TestAttack11RewindRefusesEscapingNamesInARecord(t *testing.T) {
	for _, name := range []string{"../escape.txt", "../../escape.txt", "/ESCAPE"} {
		t.Run(name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
			base := snapshot(t, x.base, nil)
			wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
			staged := x.stagedPath("t1")
			writeFile(t, filepath.Join(staged, "z.txt"), "escaping bytes\n")
			wantCode(t, x.airlock("checkpoint", "t1"), 0)
			must(t, os.Remove(filepath.Join(staged, "z.txt")))
			p, rec := attack11Record(t, x, "t1", 1)
			target := name
			if strings.HasPrefix(name, "/") {
				target = filepath.Join(testbin.RealDir(t), "escape.txt")
			}
			for _, c := range attack11Changes(t, rec) {
				if c["path"] == "z.txt" {
					c["path"] = target
					c["result"].(map[string]any)["path"] = target
				}
			}
			attack11Write(t, p, rec)
			r := x.airlock("rewind", "t1", "1")
			// The record's seal refuses it first; the name check beneath
			// the staged root holds should the seal and the index be
			// rewritten to match.
			if r.Code != 125 || !(strings.Contains(r.Stderr, "checkpoint 1's record") || strings.Contains(r.Stderr, "not a clean relative path beneath the root")) {
				t.Fatalf("a rewind to a record naming %q: exit %d\n%s", target, r.Code, r.Stderr)
			}
			abs := target
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(staged, filepath.FromSlash(target))
			}
			if _, err := os.Lstat(abs); err == nil {
				t.Errorf("the rewind wrote %s, outside the staged tree", abs)
			}
			wantTree(t, "base", base, snapshot(t, x.base, nil))
		})
	}
}

// TestAttack11CommitAndRewindLandOneStateEntirely: a commit and a rewind
// of the same transaction at once. Whichever holds the transaction first,
// the base gets either the state before the rewind or checkpoint 1's,
// entirely, never a mix.
func TestAttack11CommitAndRewindLandOneStateEntirely(t *testing.T) {
	setup := func(t *testing.T) (*h, tree, tree) {
		x := newH(t)
		build(t, x.base, tree{"a.txt": F(0o644, "a\n"), "b.txt": F(0o644, "b\n")})
		wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
		staged := x.stagedPath("t1")
		writeFile(t, filepath.Join(staged, "a.txt"), "a at 1\n")
		writeFile(t, filepath.Join(staged, "n1.txt"), "new at 1\n")
		wantCode(t, x.airlock("checkpoint", "t1"), 0)
		at1 := snapshot(t, staged, nil)
		writeFile(t, filepath.Join(staged, "a.txt"), "a later\n")
		writeFile(t, filepath.Join(staged, "b.txt"), "b later\n")
		must(t, os.Remove(filepath.Join(staged, "n1.txt")))
		return x, at1, snapshot(t, staged, nil)
	}
	t.Run("rewind first", func(t *testing.T) {
		x, at1, _ := setup(t)
		pause := testbin.RealDir(t)
		p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=rewind-checkpointed:" + pause}, args: []string{"rewind", "t1", "1"}})
		waitFile(t, filepath.Join(pause, "reached"))
		c := x.start(run{args: []string{"commit", "t1"}})
		touch(t, filepath.Join(pause, "continue"))
		if r := p.WaitSettled(); r.Code != 0 {
			t.Fatalf("rewind: exit %d\n%s", r.Code, r.Stderr)
		}
		if r := c.WaitSettled(); r.Code != 0 {
			t.Fatalf("commit: exit %d\n%s", r.Code, r.Stderr)
		}
		wantTree(t, "base after commit", at1, snapshot(t, x.base, nil))
	})
	t.Run("commit first", func(t *testing.T) {
		x, _, later := setup(t)
		pause := testbin.RealDir(t)
		c := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", "t1"}})
		waitFile(t, filepath.Join(pause, "reached"))
		p := x.start(run{args: []string{"rewind", "t1", "1"}})
		touch(t, filepath.Join(pause, "continue"))
		if r := c.WaitSettled(); r.Code != 0 {
			t.Fatalf("commit: exit %d\n%s", r.Code, r.Stderr)
		}
		if r := p.WaitSettled(); r.Code == 0 || !strings.Contains(r.Stderr, "t1") {
			t.Fatalf("a rewind of a committed transaction: exit %d\n%s", r.Code, r.Stderr)
		}
		wantTree(t, "base after commit", later, snapshot(t, x.base, nil))
	})
}

// TestAttack11TwoRewindsAtOnceEndExact: a second rewind started while a
// first one holds the transaction waits for it, then makes the tree
// exactly its own target.
func TestAttack11TwoRewindsAtOnceEndExact(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "a.txt"), "a at 1\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	at1 := snapshot(t, staged, nil)
	must(t, os.Remove(filepath.Join(staged, "a.txt")))
	build(t, staged, tree{"a.txt": D(0o755), "a.txt/in": F(0o644, "in\n")})
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	at2 := snapshot(t, staged, nil)
	writeFile(t, filepath.Join(staged, "other.txt"), "other\n")

	pause := testbin.RealDir(t)
	first := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=rewind-checkpointed:" + pause}, args: []string{"rewind", "t1", "1"}})
	waitFile(t, filepath.Join(pause, "reached"))
	second := x.start(run{args: []string{"rewind", "t1", "2"}})
	touch(t, filepath.Join(pause, "continue"))
	if r := first.WaitSettled(); r.Code != 0 {
		t.Fatalf("first rewind: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := second.WaitSettled(); r.Code != 0 {
		t.Fatalf("second rewind: exit %d\n%s", r.Code, r.Stderr)
	}
	wantTree(t, "staged after both rewinds", at2, snapshot(t, staged, nil))
	// The first rewind's own checkpoint (3) and the second's (4) each
	// hold what they replaced.
	wantCode(t, x.airlock("rewind", "t1", "4"), 0)
	wantTree(t, "staged at the second rewind's checkpoint", at1, snapshot(t, staged, nil))
}

// TestAttack11RewindAndDiscardAtOnce: a discard started while a rewind
// holds the transaction waits for it, then discards; the base is never
// touched, and the transaction is discarded, not rewound after.
func TestAttack11RewindAndDiscardAtOnce(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	base := snapshot(t, x.base, nil)
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "a.txt"), "a at 1\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	writeFile(t, filepath.Join(staged, "a.txt"), "a later\n")
	pause := testbin.RealDir(t)
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=rewind-checkpointed:" + pause}, args: []string{"rewind", "t1", "1"}})
	waitFile(t, filepath.Join(pause, "reached"))
	d := x.start(run{args: []string{"discard", "t1"}})
	touch(t, filepath.Join(pause, "continue"))
	if r := p.WaitSettled(); r.Code != 0 {
		t.Fatalf("rewind: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := d.WaitSettled(); r.Code != 0 {
		t.Fatalf("discard: exit %d\n%s", r.Code, r.Stderr)
	}
	r := x.airlock("rewind", "t1", "1")
	if r.Code == 0 {
		t.Fatalf("a discarded transaction was rewound:\n%s", r.Stderr)
	}
	wantTree(t, "base", base, snapshot(t, x.base, nil))
}

// TestAttack11CheckpointBytesOutliveAnotherCommitAndGC: while t1 is
// open, t2 commits over the file t1's checkpoint changed, and gc runs.
// t1's checkpoint bytes (kept as checkpoint content, not as t2's commit
// originals of the same path) still rewind exactly, and the base keeps
// t2's commit.
func TestAttack11CheckpointBytesOutliveAnotherCommitAndGC(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a at open\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t2"), 0)
	s1, s2 := x.stagedPath("t1"), x.stagedPath("t2")
	writeFile(t, filepath.Join(s1, "a.txt"), "t1's own a\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	at1 := snapshot(t, s1, nil)
	writeFile(t, filepath.Join(s1, "a.txt"), "t1's later a\n")
	writeFile(t, filepath.Join(s2, "a.txt"), "t2 committed a\n")
	wantCode(t, x.airlock("commit", "t2"), 0)
	wantCode(t, x.airlock("gc", "--older-than", "0"), 0)
	wantCode(t, x.airlock("rewind", "t1", "1"), 0)
	wantTree(t, "t1 after rewind 1", at1, snapshot(t, s1, nil))
	wantTree(t, "base", tree{"a.txt": F(0o644, "t2 committed a\n")}, snapshot(t, x.base, nil))
}

// TestAttack11RewindRefusesAStagedRootSwappedForTheBase: a same-user
// process swaps the staged workspace for a symlink to the base. The
// rewind refuses naming the symlink and never writes the base.
func TestAttack11RewindRefusesAStagedRootSwappedForTheBase(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	base := snapshot(t, x.base, nil)
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "a.txt"), "a at 1\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	writeFile(t, filepath.Join(staged, "x.txt"), "later\n")
	must(t, os.Rename(staged, staged+".real"))
	must(t, os.Symlink(x.base, staged))
	r := x.airlock("rewind", "t1", "1")
	if r.Code != 125 || !strings.Contains(r.Stderr, "refusing to follow a symlink") {
		t.Fatalf("a rewind of a staged root swapped for the base: exit %d\n%s", r.Code, r.Stderr)
	}
	wantTree(t, "base", base, snapshot(t, x.base, nil))
}

// TestAttack11PostToolUseNeverFailsTheAgent: the PostToolUse hook gets
// a cwd that is not a transaction's (none, or one that does not exist)
// or a transaction whose checkpoint cannot be taken (a record that is
// not JSON). It exits 0 and answers nothing on stdout. Input that is not
// a JSON object at all (Claude Code never sends it) exits 125, never 2,
// which Claude Code would feed back to the model.
func TestAttack11PostToolUseNeverFailsTheAgent(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	r := testbin.Run(t, testbin.Cmd{Bin: airlockBin, Args: []string{"hook", "claude", "worktree-create"}, Dir: x.base,
		Stdin: `{"session_id":"s1","cwd":"` + x.base + `","hook_event_name":"WorktreeCreate","name":"wt"}`, Env: x.environ(), Timeout: commandTimeout})
	if r.Code != 0 {
		t.Fatalf("worktree-create: %s", r)
	}
	staged := strings.TrimSpace(r.Stdout)
	writeFile(t, filepath.Join(staged, "b.txt"), "b\n")
	// A checkpoint record that is not JSON: the hook's checkpoint fails.
	writeFile(t, filepath.Join(x.state, "tx", "wt", "checkpoint-7.json"), "{not json")
	post := func(cwd string) string {
		return `{"session_id":"s1","cwd":"` + cwd + `","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{"file_path":"b.txt"}}`
	}
	for _, tc := range []struct {
		name, in string
		code     int
	}{
		{"no cwd", `{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash"}`, 0},
		{"missing cwd", post(filepath.Join(staged, "no", "such")), 0},
		{"unreadable record", post(staged), 0},
		{"not JSON", "{", 125},
		{"empty", "", 125},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testbin.Run(t, testbin.Cmd{Bin: airlockBin, Args: []string{"hook", "claude", "post-tool-use"}, Dir: x.home,
				Stdin: tc.in, Env: x.environ(), Timeout: commandTimeout})
			if r.Code != tc.code || r.Stdout != "" {
				t.Errorf("post-tool-use on %s: want exit %d, nothing on stdout: %s", tc.name, tc.code, r)
			}
			if tc.name == "unreadable record" && !strings.Contains(r.Stderr, "airlock: no checkpoint of wt after Write") {
				t.Errorf("a skipped checkpoint was not said on stderr: %s", r)
			}
		})
	}
}

// TestAttack11RewindNeverWritesThroughAHardLink: the agent replaces a
// file checkpoint 1 recorded with a hard link to a file outside the
// staged tree, and hard-links two files inside it. The rewind puts each
// path's bytes back as a file of its own: the outside file keeps its
// bytes, and each of the pair gets its own recorded content.
func TestAttack11RewindNeverWritesThroughAHardLink(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	outside := filepath.Join(testbin.RealDir(t), "outside.txt")
	writeFile(t, outside, "outside, not the tree's\n")
	writeFile(t, filepath.Join(staged, "x.txt"), "x at 1\n")
	writeFile(t, filepath.Join(staged, "p.txt"), "p at 1\n")
	writeFile(t, filepath.Join(staged, "q.txt"), "q at 1\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	at1 := snapshot(t, staged, nil)
	for _, p := range []string{"x.txt", "q.txt"} {
		must(t, os.Remove(filepath.Join(staged, p)))
	}
	must(t, os.Link(outside, filepath.Join(staged, "x.txt")))
	must(t, os.Link(filepath.Join(staged, "p.txt"), filepath.Join(staged, "q.txt")))
	wantCode(t, x.airlock("rewind", "t1", "1"), 0)
	wantTree(t, "staged after rewind 1", at1, snapshot(t, staged, nil))
	if b, _ := os.ReadFile(outside); string(b) != "outside, not the tree's\n" {
		t.Errorf("the file outside the tree was written: %q", b)
	}
	wantTree(t, "base", tree{"a.txt": F(0o644, "a\n")}, snapshot(t, x.base, nil))
}

// TestAttack11PostToolUseDuringACommitRecordsNothing: the PostToolUse
// hook runs while a commit of its transaction holds it (paused at
// checked). It waits for the commit, exits 0 with nothing on stdout and
// records no checkpoint of the settled transaction; the commit lands the
// tree it froze.
func TestAttack11PostToolUseDuringACommitRecordsNothing(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	r := testbin.Run(t, testbin.Cmd{Bin: airlockBin, Args: []string{"hook", "claude", "worktree-create"}, Dir: x.base,
		Stdin: `{"session_id":"s1","cwd":"` + x.base + `","hook_event_name":"WorktreeCreate","name":"wt"}`, Env: x.environ(), Timeout: commandTimeout})
	if r.Code != 0 {
		t.Fatalf("worktree-create: %s", r)
	}
	staged := strings.TrimSpace(r.Stdout)
	writeFile(t, filepath.Join(staged, "a.txt"), "a by the agent\n")
	want := snapshot(t, staged, nil)
	pause := testbin.RealDir(t)
	c := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", "wt"}})
	waitFile(t, filepath.Join(pause, "reached"))
	hook := testbin.Start(t, testbin.Cmd{Bin: airlockBin, Args: []string{"hook", "claude", "post-tool-use"}, Dir: staged,
		Stdin: `{"session_id":"s1","cwd":"` + staged + `","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"make"}}`,
		Env:   x.environ(), Timeout: commandTimeout})
	touch(t, filepath.Join(pause, "continue"))
	if r := c.WaitSettled(); r.Code != 0 {
		t.Fatalf("commit: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := hook.Wait(); r.Code != 0 || r.Stdout != "" {
		t.Fatalf("post-tool-use during a commit: %s", r)
	}
	cr := x.airlock("checkpoints", "wt", "--json")
	wantCode(t, cr, 0)
	if n := strings.Count(cr.Stdout, `"number"`); n != 1 {
		t.Errorf("the committed transaction has %d checkpoints, want 1 (at open):\n%s", n, cr.Stdout)
	}
	wantTree(t, "base after the commit", want, snapshot(t, x.base, nil))
}

// TestAttack11UndoRestoresTheOriginalsNotACheckpoint: a transaction
// checkpoints two versions of a.txt (kept in the same content store as
// the originals its commit replaces), commits, and gc runs. Undo puts
// back the base's bytes before the commit, never a checkpoint's.
func TestAttack11UndoRestoresTheOriginalsNotACheckpoint(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a at open\n")})
	base := snapshot(t, x.base, nil)
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "a.txt"), "checkpointed a\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	writeFile(t, filepath.Join(staged, "a.txt"), "committed a\n")
	writeFile(t, filepath.Join(staged, "n.txt"), "new\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	wantCode(t, x.airlock("commit", "t1"), 0)
	wantCode(t, x.airlock("gc"), 0)
	wantCode(t, x.airlock("undo", "t1", "--workdir", x.base), 0)
	wantTree(t, "base after undo", base, snapshot(t, x.base, nil))
}

// TestAttack11PostToolUseCheckpointsOnlyItsOwnSessionsTx: Claude Code session
// sB's WorktreeCreate opens wtb; session sA, whose cwd is in wtb's staged
// tree (a `cd` there, or a second agent started in it), runs a tool. sA's
// PostToolUse hook takes no checkpoint of wtb, whose record names sB: only
// the session that opened a transaction checkpoints it, as only it ends it.
func TestAttack11PostToolUseCheckpointsOnlyItsOwnSessionsTx(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	in := func(session, event, cwd string, kv ...any) string {
		m := map[string]any{"session_id": session, "cwd": cwd, "hook_event_name": event}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	r := testbin.Run(t, testbin.Cmd{Bin: airlockBin, Args: []string{"hook", "claude", "worktree-create"}, Dir: x.base,
		Stdin: in("sB", "WorktreeCreate", x.base, "name", "wtb"), Env: x.environ(), Timeout: commandTimeout})
	if r.Code != 0 {
		t.Fatalf("worktree-create: %s", r)
	}
	staged := strings.TrimSpace(r.Stdout)
	writeFile(t, filepath.Join(staged, "b.txt"), "written by session sB\n")
	r = testbin.Run(t, testbin.Cmd{Bin: airlockBin, Args: []string{"hook", "claude", "post-tool-use"}, Dir: staged,
		Stdin: in("sA", "PostToolUse", staged, "tool_name", "Bash", "tool_input", map[string]any{"command": "ls"}), Env: x.environ(), Timeout: commandTimeout})
	if r.Code != 0 || r.Stdout != "" {
		t.Fatalf("post-tool-use: %s", r)
	}
	cr := x.airlock("checkpoints", "wtb", "--json")
	wantCode(t, cr, 0)
	if n := strings.Count(cr.Stdout, `"number"`); n != 1 {
		t.Errorf("session sA's hook left wtb (session sB's) with %d checkpoints, want 1 (WorktreeCreate's at open)\n%s", n, r.Stderr)
	}
}

// TestAttack11RewindNeverLosesBytesBehindATamperedObject: a same-user
// process overwrites the stored object of a file the agent wrote
// (checkpoint 2). The checkpoint a rewind to 1 takes first proves every
// object it names by its bytes (one recorded by stat facts is hashed, one
// already stored under the digest is compared and replaced when wrong),
// so checkpoint 3 holds the file's good bytes and rewinding to it undoes
// the rewind exactly.
func TestAttack11RewindNeverLosesBytesBehindATamperedObject(t *testing.T) {
	for _, reread := range []bool{false, true} {
		name := "stat proved"
		if reread {
			name = "file read again"
		}
		t.Run(name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
			wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
			staged := x.stagedPath("t1")
			wantCode(t, x.airlock("checkpoint", "t1"), 0)
			writeFile(t, filepath.Join(staged, "a.txt"), "precious\n")
			wantCode(t, x.airlock("checkpoint", "t1"), 0)
			obj := attack11Object(t, x, "precious\n")
			must(t, os.Chmod(obj, 0o600))
			must(t, os.WriteFile(obj, []byte("tampered\n"), 0o600))
			if reread {
				// A new ctime: the checkpoint reads the file again.
				must(t, os.Chmod(filepath.Join(staged, "a.txt"), 0o640))
				must(t, os.Chmod(filepath.Join(staged, "a.txt"), 0o644))
			}
			r := x.airlock("rewind", "t1", "1")
			if r.Code != 0 {
				t.Fatalf("rewind t1 1 (its bytes are the base's, untampered): exit %d\n%s", r.Code, r.Stderr)
			}
			r = x.airlock("rewind", "t1", "3")
			b, _ := os.ReadFile(filepath.Join(staged, "a.txt"))
			if r.Code != 0 || string(b) != "precious\n" {
				t.Errorf("undoing the rewind (checkpoint 3): exit %d, a.txt %q, want \"precious\\n\"\n%s", r.Code, b, r.Stderr)
			}
		})
	}
}

// TestAttack11RewindRefusesATamperedObjectBeforeWriting: the object a
// rewind would restore was overwritten by a same-user process. The rewind
// hashes every object it reads before it writes anything: it is refused,
// naming the path and the object, and the staged tree is as it was.
func TestAttack11RewindRefusesATamperedObjectBeforeWriting(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n"), "b.txt": F(0o644, "b\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "a.txt"), "a at 1\n")
	writeFile(t, filepath.Join(staged, "b.txt"), "b at 1\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	writeFile(t, filepath.Join(staged, "a.txt"), "a later\n")
	writeFile(t, filepath.Join(staged, "b.txt"), "b later\n")
	before := snapshot(t, staged, nil)
	obj := attack11Object(t, x, "b at 1\n")
	must(t, os.Chmod(obj, 0o600))
	must(t, os.WriteFile(obj, []byte("tampered\n"), 0o600))
	r := x.airlock("rewind", "t1", "1")
	wantCode(t, r, 125)
	for _, want := range []string{"nothing was changed", "b.txt", obj} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, r.Stderr)
		}
	}
	wantTree(t, "staged after the refused rewind", before, snapshot(t, staged, nil))
}

// TestAttack11RewindRefusesARewrittenRecord: a same-user process
// rewrites checkpoint 1's record so that a.txt's digest is b.txt's (an
// object the store holds). The rewind checks the record against its seal
// in the event log and against what the content store's index kept for
// the transaction's checkpoints, and refuses it, naming the checkpoint,
// with nothing changed; with the seal rewritten too, the index still
// tells.
func TestAttack11RewindRefusesARewrittenRecord(t *testing.T) {
	for _, sealToo := range []bool{false, true} {
		name := "record"
		if sealToo {
			name = "record and its seal"
		}
		t.Run(name, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a.txt": F(0o644, "a\n"), "b.txt": F(0o644, "b\n")})
			wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
			staged := x.stagedPath("t1")
			writeFile(t, filepath.Join(staged, "a.txt"), "a at 1\n")
			writeFile(t, filepath.Join(staged, "b.txt"), "b at 1\n")
			wantCode(t, x.airlock("checkpoint", "t1"), 0)
			writeFile(t, filepath.Join(staged, "a.txt"), "a later\n")
			before := snapshot(t, staged, nil)

			p, rec := attack11Record(t, x, "t1", 1)
			digests := map[string]any{}
			for _, c := range attack11Changes(t, rec) {
				digests[c["path"].(string)] = c["result"].(map[string]any)["digest"]
			}
			for _, c := range attack11Changes(t, rec) {
				if c["path"] == "a.txt" {
					c["result"].(map[string]any)["digest"] = digests["b.txt"]
				}
			}
			attack11Write(t, p, rec)
			if sealToo {
				// The seal dropped from the event log: only the content
				// store's index is left to tell.
				ev := filepath.Join(x.state, "tx", "t1", "events.jsonl")
				b, err := os.ReadFile(ev)
				must(t, err)
				var kept []string
				for _, l := range strings.SplitAfter(string(b), "\n") {
					if !strings.Contains(l, `"checkpointed"`) {
						kept = append(kept, l)
					}
				}
				must(t, os.WriteFile(ev, []byte(strings.Join(kept, "")), 0o600))
			}

			r := x.airlock("rewind", "t1", "1")
			wantCode(t, r, 125)
			for _, want := range []string{"checkpoint 1's record", "nothing was changed"} {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, r.Stderr)
				}
			}
			wantTree(t, "staged after the refused rewind", before, snapshot(t, staged, nil))
		})
	}
}

// TestAttack11RewindAfterAnotherCommitOverAnUntouchedFile: t1 and t2 are
// open over one base; t1 takes checkpoint 1 (a.txt untouched), then edits
// a.txt; t2 commits its own a.txt. Rewind t1 1 writes a.txt's bytes at
// open and succeeds, and show counts no change: the change set compares a
// staged file with the base's bytes at open (the content store keeps
// them: t2's commit kept a.txt's original), not with the live base.
func TestAttack11RewindAfterAnotherCommitOverAnUntouchedFile(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a at open\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t2"), 0)
	s1, s2 := x.stagedPath("t1"), x.stagedPath("t2")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	at1 := snapshot(t, s1, nil)
	writeFile(t, filepath.Join(s1, "a.txt"), "t1's own a\n")
	writeFile(t, filepath.Join(s2, "a.txt"), "t2 committed a\n")
	wantCode(t, x.airlock("commit", "t2"), 0)
	r := x.airlock("rewind", "t1", "1")
	if r.Code != 0 {
		t.Errorf("rewind t1 1 with nothing writing: exit %d\n%s", r.Code, r.Stderr)
	}
	wantTree(t, "t1 after rewind 1", at1, snapshot(t, s1, nil))
	show := x.airlock("show", "t1")
	if !strings.Contains(show.Stdout, "+0 ~0 -0") {
		t.Errorf("t1 holds checkpoint 1's tree (no change) but show says:\n%s", show.Stdout)
	}
	if d := attack11Diff(t, x, "t1"); d != "" {
		t.Errorf("t1 holds checkpoint 1's tree (no change) but diff prints:\n%s", d)
	}
}

// TestAttack11RewindAfterTheHumanEditsTheBase: checkpoint 1 has a.txt
// untouched; the agent then deletes (or rewrites) it and checkpoint 2
// records that, while the base's a.txt still proves its bytes at open:
// checkpoint 2 keeps them in the content store. The human then edits the
// base's a.txt; rewind 1 restores the bytes at open from the store.
func TestAttack11RewindAfterTheHumanEditsTheBase(t *testing.T) {
	for _, agent := range []string{"deletes", "rewrites"} {
		t.Run(agent, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a.txt": F(0o644, "a at open\n")})
			wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
			staged := x.stagedPath("t1")
			writeFile(t, filepath.Join(staged, "b.txt"), "b\n")
			wantCode(t, x.airlock("checkpoint", "t1"), 0)
			at1 := snapshot(t, staged, nil)
			if agent == "deletes" {
				must(t, os.Remove(filepath.Join(staged, "a.txt")))
			} else {
				writeFile(t, filepath.Join(staged, "a.txt"), "the agent's a\n")
			}
			wantCode(t, x.airlock("checkpoint", "t1"), 0)
			writeFile(t, filepath.Join(x.base, "a.txt"), "the human's a\n")
			r := x.airlock("rewind", "t1", "1")
			if r.Code != 0 {
				t.Fatalf("rewind t1 1 after the human edited the base: exit %d\n%s", r.Code, r.Stderr)
			}
			wantTree(t, "staged after rewind 1", at1, snapshot(t, staged, nil))
		})
	}
}

// TestAttack11RewindRefusedWhenNoCheckpointSawTheBytesAtOpen: checkpoint 1
// has a.txt untouched; the agent deletes it and the human edits the base's
// a.txt before any checkpoint recorded the deletion. No copy of a.txt's
// bytes at open is left (the staged one is deleted, the base's rewritten,
// no commit or checkpoint kept them): the rewind to 1 is refused, naming
// the path, and the staged tree is as it was.
func TestAttack11RewindRefusedWhenNoCheckpointSawTheBytesAtOpen(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a at open\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "b.txt"), "b\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	must(t, os.Remove(filepath.Join(staged, "a.txt")))
	writeFile(t, filepath.Join(x.base, "a.txt"), "the human's a\n")
	before := snapshot(t, staged, nil)
	r := x.airlock("rewind", "t1", "1")
	wantCode(t, r, 125)
	for _, want := range []string{"a.txt", "its content at open was not kept", "nothing was changed"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, r.Stderr)
		}
	}
	wantTree(t, "staged after the refused rewind", before, snapshot(t, staged, nil))
}
