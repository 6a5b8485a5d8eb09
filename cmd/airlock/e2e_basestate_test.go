package main_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The state airlock keeps per base (its commit lock, its in-flight marker,
// its receipt chain, its originals) belongs to the base directory, not to
// a path that names it: these tests reach one directory by two paths, move
// it, delete it, and plant FIFOs in that state.

// sixFiles is a base whose six files a transaction rewrites, so that a
// fault after the third apply step leaves it half-applied.
func (x *h) sixFiles(id string) (before, after tree) {
	x.t.Helper()
	before, after = tree{}, tree{}
	for _, i := range []string{"1", "2", "3", "4", "5", "6"} {
		before["f"+i] = F(0o644, "old"+i+"\n")
		after["f"+i] = F(0o644, "new"+i+"\n")
	}
	build(x.t, x.base, before)
	staged := x.openTx(id)
	for p := range after {
		writeFile(x.t, filepath.Join(staged, p), "new"+strings.TrimPrefix(p, "f")+"\n")
	}
	return before, after
}

// killMidApply commits id and kills it after three apply steps.
func (x *h) killMidApply(id string) {
	x.t.Helper()
	r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=apply:3"}, "commit", id)
	if r.Signal != syscall.SIGKILL {
		x.t.Fatalf("the commit was not killed at apply:3:\n%s", r)
	}
}

// TestE2EAliasPathFindsTheInterruptedApply (attack C/b4): the same
// directory reached through a bind mount is the same base: open and commit
// through the alias refuse InterruptedApply, and recover through it rolls
// the base back.
func TestE2EAliasPathFindsTheInterruptedApply(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a bind mount needs root")
	}
	x := newH(t)
	alias := testbin.RealDir(t)
	if out, err := exec.Command("mount", "--bind", x.base, alias).CombinedOutput(); err != nil {
		testbin.Missing(t, "mount --bind failed: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", alias).Run() })
	before, _ := x.sixFiles("t1")
	x.killMidApply("t1")
	half := snapshot(t, x.base, nil)

	r := x.airlock("open", "--workdir", alias)
	wantCode(t, r, 75)
	if !strings.Contains(r.Stderr, "InterruptedApply") || !strings.Contains(r.Stderr, "t1") {
		t.Errorf("open through the alias %s of a half-applied base does not refuse InterruptedApply:\n%s", alias, r)
	}
	staged := x.openTxAt(alias, "t2", 75)
	if staged != "" {
		writeFile(t, filepath.Join(staged, "g"), "extra\n")
		r = x.airlock("commit", "t2")
		wantCode(t, r, 75)
		wantBlock(t, r, map[string]string{"refusal": "InterruptedApply"})
	}
	wantTree(t, "base after work through the alias", half, snapshot(t, x.base, nil))

	r = x.airlock("recover", "--workdir", alias)
	wantCode(t, r, 0)
	if strings.Contains(r.Stderr, "nothing to recover") || !strings.Contains(r.Stderr, "same directory") {
		t.Errorf("recover through the alias does not recover t1, saying the paths name the same directory:\n%s", r)
	}
	wantTree(t, "base after recover through the alias", before, snapshot(t, x.base, nil))
	if r := x.airlock("recover", "--workdir", x.base); !strings.Contains(r.Stderr, "nothing to recover") {
		t.Errorf("recover through the base's own path after the alias's:\n%s", r)
	}
}

// openTxAt opens transaction id over dir and returns its staged path, or
// "" when open exits with code (expected non-zero).
func (x *h) openTxAt(dir, id string, code int) string {
	x.t.Helper()
	r := x.airlock("open", "--workdir", dir, "--id", id)
	if r.Code == 0 {
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		x.t.Errorf("open over %s succeeded while an apply is in flight:\n%s", dir, r)
		return lines[len(lines)-1]
	}
	wantCode(x.t, r, code)
	return ""
}

// TestE2EMovedBaseRecovers (attack C/b5): a base moved (mv) after its
// commit was killed half-way is still that base: recover at its new path
// rolls it back, and open there refuses until then, naming the old path.
func TestE2EMovedBaseRecovers(t *testing.T) {
	x := newH(t)
	before, _ := x.sixFiles("t1")
	x.killMidApply("t1")
	moved := filepath.Join(testbin.RealDir(t), "moved")
	must(t, os.Rename(x.base, moved))

	r := x.airlock("open", "--workdir", moved)
	wantCode(t, r, 75)
	if !strings.Contains(r.Stderr, "InterruptedApply") || !strings.Contains(r.Stderr, x.base) {
		t.Errorf("open over the moved base does not refuse InterruptedApply naming its old path %s:\n%s", x.base, r)
	}
	// Without being told, recover cannot know that the directory with the
	// old one's device and inode is that one moved (on a file system
	// without birth times a new directory can get a deleted one's inode):
	// it does nothing and says how to confirm.
	half := snapshot(t, moved, nil)
	r = x.airlock("recover", "--workdir", moved)
	wantCode(t, r, 125)
	if !strings.Contains(r.Stderr, "--moved") {
		t.Errorf("recover at the new path does not say how to confirm the move:\n%s", r)
	}
	wantTree(t, "moved base after an unconfirmed recover", half, snapshot(t, moved, nil))
	r = x.airlock("recover", "--workdir", moved, "--moved")
	wantCode(t, r, 0)
	if strings.Contains(r.Stderr, "nothing to recover") {
		t.Fatalf("recover at the moved base's new path finds nothing:\n%s", r)
	}
	wantTree(t, "moved base after recover", before, snapshot(t, moved, nil))
	r = x.airlock("commit", "t1")
	wantCode(t, r, 75) // its base path is gone: BaseDrift, kept
	wantCode(t, x.airlock("run", "--workdir", moved, "--", "sh", "-c", "echo x > g"), 0)
}

// TestE2EDeletedBaseIsCleared (attack C/b5, and its sequel: a volume not
// mounted yet looks just like a deleted base): an interrupted transaction
// whose base is not there is kept by gc, named or not, and by a plain
// recover, each saying how to confirm; `recover --workdir OLD --base-gone`
// clears it, saying that the base no longer exists and where the journal's
// backups (the only copy of what the base held) now are.
func TestE2EDeletedBaseIsCleared(t *testing.T) {
	for _, how := range []string{"recover"} {
		t.Run(how, func(t *testing.T) {
			x := newH(t)
			x.sixFiles("t1")
			x.killMidApply("t1")
			must(t, os.RemoveAll(x.base))

			// A base that is not there may only be unmounted for now:
			// neither gc, named or not, nor a plain recover clears it.
			for _, args := range [][]string{{"gc"}, {"gc", "t1"}, {"gc", "--dry-run", "t1"}} {
				r := x.airlock(args...)
				wantCode(t, r, 0)
				if !strings.Contains(r.Stdout, "kept t1") || !strings.Contains(r.Stdout, "--base-gone") || !testbin.Exists(filepath.Join(x.state, "tx", "t1", "journal")) {
					t.Errorf("%v does not keep t1 saying how to clear it:\n%s", args, r)
				}
			}
			r := x.airlock("recover", "--workdir", x.base)
			wantCode(t, r, 125)
			if !strings.Contains(r.Stderr, "--base-gone") || !testbin.Exists(filepath.Join(x.state, "tx", "t1", "journal")) {
				t.Errorf("a plain recover of a missing base does not say how to confirm, or acted:\n%s", r)
			}
			r = x.airlock("recover", "--workdir", x.base, "--base-gone")
			wantCode(t, r, 0)
			out := r.Stdout + r.Stderr
			if !strings.Contains(out, x.base+" no longer exists") {
				t.Errorf("%s does not say the base no longer exists:\n%s", how, r)
			}
			journals, _ := filepath.Glob(filepath.Join(x.state, "bases", "retired", "*", "journal-t1"))
			if len(journals) != 1 || !strings.Contains(out, journals[0]) {
				t.Fatalf("%s does not keep the journal of t1 and name where (kept: %v):\n%s", how, journals, r)
			}
			backups, _ := filepath.Glob(filepath.Join(journals[0], "backup", "*"))
			held := ""
			for _, b := range backups {
				held += testbin.ReadFile(t, b)
			}
			for _, i := range []string{"1", "2", "3"} {
				if !strings.Contains(held, "old"+i+"\n") {
					t.Errorf("the kept journal's backups lack what f%s held (old%s): %q", i, i, held)
				}
			}
			if r := x.airlock("recover", "--workdir", x.base); r.Code == 0 && !strings.Contains(r.Stderr, "nothing to recover") {
				t.Errorf("a second recover of the deleted base:\n%s", r)
			}
			// Settled now: past any grace, gc removes it.
			wantCode(t, x.airlock("gc", "--older-than", "0"), 0)
			if testbin.Exists(filepath.Join(x.state, "tx", "t1")) {
				t.Errorf("t1 is still kept after it was cleared and gc --older-than 0 ran")
			}
			// A new directory at the old path starts afresh.
			must(t, os.Mkdir(x.base, 0o755))
			wantCode(t, x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo x > g"), 0)
		})
	}
}

// TestE2EReusedInodeDoesNotInheritTheMarker: state whose base.json
// records another birth time than the directory's (a deleted directory
// whose inode the file system gave to a new one) is not inherited: open
// refuses naming the old directory, and recover clears the old apply
// without touching the new directory.
func TestE2EReusedInodeDoesNotInheritTheMarker(t *testing.T) {
	x := newH(t)
	x.sixFiles("t1")
	x.killMidApply("t1")
	recs, _ := filepath.Glob(filepath.Join(x.state, "bases", "*", "base.json"))
	if len(recs) != 1 {
		t.Fatalf("base records: %v", recs)
	}
	var rec map[string]any
	must(t, json.Unmarshal([]byte(testbin.ReadFile(t, recs[0])), &rec))
	if _, ok := rec["born"]; !ok {
		testbin.Missing(t, "the file system of %s records no birth time", x.base)
	}
	rec["path"], rec["born"] = "/gone/old-project", 1
	data, _ := json.Marshal(rec)
	must(t, os.WriteFile(recs[0], data, 0o600))
	half := snapshot(t, x.base, nil)

	r := x.airlock("open", "--workdir", x.base)
	if r.Code == 0 || !strings.Contains(r.Stderr, "/gone/old-project") || !strings.Contains(r.Stderr, "no longer exists") {
		t.Errorf("open over a directory that reuses a deleted one's inode inherits its state silently:\n%s", r)
	}
	r = x.airlock("recover", "--workdir", x.base)
	wantCode(t, r, 0)
	if !strings.Contains(r.Stderr, "birth times differ") || !strings.Contains(r.Stderr, "journal-t1") {
		t.Errorf("recover does not say the state was another directory's and where its journal went:\n%s", r)
	}
	wantTree(t, "the new directory after recover of the old one's apply", half, snapshot(t, x.base, nil))
	wantCode(t, x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo x > g"), 0)
}

// TestE2ELegacyPathKeyedInflightIsFound: state an earlier version wrote
// under a name derived from the base's path, marking an apply in flight,
// is found by the directory's identity (migrated), even through another
// path: after the base was moved, open there refuses and recover rolls
// it back.
func TestE2ELegacyPathKeyedInflightIsFound(t *testing.T) {
	x := newH(t)
	before, _ := x.sixFiles("t1")
	x.killMidApply("t1")
	dirs, _ := filepath.Glob(filepath.Join(x.state, "bases", "*"))
	if len(dirs) != 1 {
		t.Fatalf("base state directories: %v", dirs)
	}
	sum := sha256.Sum256([]byte(x.base))
	if legacy := filepath.Join(x.state, "bases", hex.EncodeToString(sum[:])[:32]); legacy != dirs[0] {
		must(t, os.Rename(dirs[0], legacy))
	}
	moved := filepath.Join(testbin.RealDir(t), "moved")
	must(t, os.Rename(x.base, moved))

	wantCode(t, x.airlock("open", "--workdir", moved), 75)
	r := x.airlock("recover", "--workdir", moved, "--moved")
	wantCode(t, r, 0)
	wantTree(t, "base after recover from legacy state", before, snapshot(t, moved, nil))
}

// TestE2ENestedRunLogListsOnlyRealCommits (attack C/b8): a commit made
// inside `airlock run`'s same-path view would land in the staged tree the
// view shows, and the real base's log must not list it; the state root,
// read-only inside the run, refuses the inner transaction outright.
func TestE2ENestedRunLogListsOnlyRealCommits(t *testing.T) {
	if err := exec.Command("unshare", "--mount", "true").Run(); err != nil {
		testbin.Missing(t, "same-path mode needs a mount namespace, and `unshare --mount true` failed here: %v", err)
	}
	x := newH(t)
	writeFile(t, filepath.Join(x.base, "a"), "a\n")
	wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "real", "--", "sh", "-c", "echo b > a"), 0)
	// Inside the run the state root is read-only but for the run's own
	// transaction: an inner transaction opened in the same-path view,
	// whose commit would land in the view and be recorded as the real
	// base's, cannot even open.
	script := `set -e; out=$("$AL" open --workdir "$B" --id inner); sp=$(echo "$out" | sed -n 2p); echo evil > "$sp/a"; "$AL" commit -q inner; exit 1`
	r := x.exec(run{env: []string{"AL=" + airlockBin, "B=" + x.base}, args: []string{"run", "--workdir", x.base, "--", "sh", "-c", script}})
	if r.Code == 0 || !strings.Contains(r.Stderr, "read-only file system") {
		t.Fatalf("the outer run: want the inner open refused by the read-only state root\n%s", r)
	}
	if testbin.Exists(filepath.Join(x.state, "tx", "inner")) {
		t.Fatalf("the inner transaction was opened in the read-only state root\n%s", r)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "a")); got != "b\n" {
		t.Fatalf("the real base's a = %q", got)
	}
	if ids := x.logIDs(); len(ids) != 1 || ids[0] != "real" {
		t.Errorf("log of the real base lists %v, want only [real]: a commit the base never received is listed", ids)
	}
	r = x.airlock("undo", "--workdir", x.base)
	wantCode(t, r, 0)
	if got := testbin.ReadFile(t, filepath.Join(x.base, "a")); got != "a\n" {
		t.Errorf("undo did not revert the real commit: a = %q\n%s", got, r)
	}
}

// TestE2EStateFIFOIsRefused (attack C/b7): a FIFO in place of the head
// receipt of the chain or of the originals index, and those directories
// made writable by others, are refused naming them — never read, never a
// hang — before the base is touched; once fixed, everything works.
func TestE2EStateFIFOIsRefused(t *testing.T) {
	for _, what := range []string{"receipt", "receipts-mode", "index", "originals-mode"} {
		t.Run(what, func(t *testing.T) {
			x := newH(t)
			writeFile(t, filepath.Join(x.base, "a"), "a\n")
			wantCode(t, x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo b > a"), 0)
			heads, _ := filepath.Glob(filepath.Join(x.state, "bases", "*", "head"))
			if len(heads) != 1 {
				t.Fatalf("heads: %v", heads)
			}
			bdir := filepath.Dir(heads[0])
			head := strings.TrimPrefix(strings.TrimSpace(testbin.ReadFile(t, heads[0])), "sha256:")
			var bad string
			var restore func()
			switch what {
			case "receipt":
				bad = filepath.Join(bdir, "receipts", head+".json")
				saved := testbin.ReadFile(t, bad)
				must(t, os.Remove(bad))
				must(t, syscall.Mkfifo(bad, 0o600))
				restore = func() { os.Remove(bad); writeFile(t, bad, saved); os.Chmod(bad, 0o600) }
			case "index":
				bad = filepath.Join(bdir, "originals", "index.jsonl")
				saved := testbin.ReadFile(t, bad)
				must(t, os.Remove(bad))
				must(t, syscall.Mkfifo(bad, 0o600))
				restore = func() { os.Remove(bad); writeFile(t, bad, saved); os.Chmod(bad, 0o600) }
			case "receipts-mode", "originals-mode":
				bad = filepath.Join(bdir, strings.TrimSuffix(what, "-mode"))
				must(t, os.Chmod(bad, 0o777))
				restore = func() { os.Chmod(bad, 0o700) }
			}
			staged := x.openTx("t2")
			writeFile(t, filepath.Join(staged, "a"), "c\n")
			cmds := [][]string{{"commit", "t2"}, {"undo", "--workdir", x.base}}
			if strings.HasPrefix(what, "receipt") {
				cmds = append(cmds, []string{"log", "--workdir", x.base})
			} else {
				cmds = append(cmds, []string{"gc"})
			}
			for _, args := range cmds {
				r := x.airlock(args...)
				if r.Code == 0 || !strings.Contains(r.Stderr, bad) {
					t.Errorf("airlock %v with %s tampered: want a refusal naming it:\n%s", args, bad, r)
				}
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "a")); got != "b\n" {
				t.Errorf("the base changed although its state was refused: a = %q", got)
			}
			if inflight, _ := filepath.Glob(filepath.Join(bdir, "inflight")); len(inflight) > 0 {
				t.Errorf("a refused commit left the base marked in flight")
			}
			restore()
			r := x.airlock("commit", "t2")
			wantCode(t, r, 0)
			wantBlock(t, r, map[string]string{"outcome": "committed"})
			if ids := x.logIDs(); len(ids) != 2 {
				t.Errorf("log after the fix: %v", ids)
			}
		})
	}
}

// TestE2EGCKeepsContentSavedFromTheBase (attack B/r7): content a rollback
// saved from the base (a human's save during the commit) lives only in
// the transaction's displaced-* directory: gc and gc --dry-run keep the
// transaction, naming that content; only gc ID removes it, saying so.
func TestE2EGCKeepsContentSavedFromTheBase(t *testing.T) {
	x := newH(t)
	writeFile(t, filepath.Join(x.base, "a.txt"), "a-old\n")
	writeFile(t, filepath.Join(x.base, "b.txt"), "b-old\n")
	staged := x.openTx("t1")
	writeFile(t, filepath.Join(staged, "a.txt"), "a-new\n")
	writeFile(t, filepath.Join(staged, "b.txt"), "b-new\n")
	pause := t.TempDir()
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=apply:1:" + pause}, args: []string{"commit", "t1"}})
	waitFile(t, filepath.Join(pause, "reached"))
	tmp := filepath.Join(x.base, ".a.tmp")
	writeFile(t, tmp, "a-new\nHUMAN-SAVE\n")
	must(t, os.Rename(tmp, filepath.Join(x.base, "a.txt")))
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	wantCode(t, r, 75)
	saved, _ := filepath.Glob(filepath.Join(x.state, "tx", "t1", "displaced-*"))
	if len(saved) != 1 {
		t.Fatalf("the rollback kept no displaced content (%v):\n%s", saved, r)
	}
	wantCode(t, x.airlock("commit", "t1"), 0)

	// Past its grace (--older-than 0), what keeps it is the saved content.
	for _, args := range [][]string{{"gc", "--older-than", "0"}, {"gc", "--dry-run", "--older-than", "0"}} {
		r := x.airlock(args...)
		wantCode(t, r, 0)
		if !strings.Contains(r.Stdout, "kept t1") || !strings.Contains(r.Stdout, saved[0]) || !strings.Contains(r.Stdout, "a.txt") {
			t.Errorf("airlock %v does not keep t1 naming the content it saved from the base (%s):\n%s", args, saved[0], r)
		}
	}
	if !testbin.Exists(saved[0]) {
		t.Fatalf("gc removed the only copy of the human's save")
	}
	r = x.airlock("gc", "t1")
	wantCode(t, r, 0)
	if !strings.Contains(r.Stdout, "removed t1") || !strings.Contains(r.Stdout, saved[0]) {
		t.Errorf("gc t1 does not say it removed the content saved at %s:\n%s", saved[0], r)
	}
	if testbin.Exists(saved[0]) {
		t.Errorf("gc t1 kept %s", saved[0])
	}
}

// TestE2EBaseRecreatedAtItsPath (attack round 2, D/n7): the base is
// deleted and a new directory made at its path after its commit was killed
// half-way. open there refuses (the apply names the path), recover there
// does nothing (exit 125) but names the old one's interrupted transaction
// and how to clear it; `recover --base-gone` clears it (journal kept)
// without touching the new directory, and gc can then remove the
// transaction.
func TestE2EBaseRecreatedAtItsPath(t *testing.T) {
	for _, how := range []string{"made there", "renamed there"} {
		t.Run(how, func(t *testing.T) { baseRecreated(t, how == "renamed there") })
	}
}

// baseRecreated is TestE2EBaseRecreatedAtItsPath with the new directory
// made at the path (the file system may give it the old one's inode) or
// made beside it first and renamed there (another inode for certain).
func baseRecreated(t *testing.T, renamed bool) {
	x := newH(t)
	x.sixFiles("t1")
	x.killMidApply("t1")
	other := x.base + ".new"
	if renamed {
		must(t, os.Mkdir(other, 0o755))
	}
	must(t, os.RemoveAll(x.base))
	if renamed {
		must(t, os.Rename(other, x.base))
	} else {
		must(t, os.Mkdir(x.base, 0o755))
	}
	writeFile(t, filepath.Join(x.base, "mine"), "the new directory's\n")
	fresh := snapshot(t, x.base, nil)

	// InterruptedApply (exit 75) when the new directory has another
	// inode; when it has the old one's, the birth times tell them apart
	// and the state under that identity is refused as another's.
	if r := x.airlock("open", "--workdir", x.base); r.Code == 0 || !strings.Contains(r.Stderr, "t1") {
		t.Errorf("open over a new directory at the path of a half-applied base does not refuse naming t1:\n%s", r)
	}
	r := x.airlock("recover", "--workdir", x.base)
	switch {
	case !renamed && r.Code == 0 && strings.Contains(r.Stderr, "birth times differ"):
		// The file system gave the new directory the old one's inode, and
		// the birth time told them apart: cleared at once, as for a base
		// that is gone.
	case r.Code == 125 && strings.Contains(r.Stderr, "t1 was interrupted") && strings.Contains(r.Stderr, "--base-gone"):
		r = x.airlock("recover", "--workdir", x.base, "--base-gone")
		wantCode(t, r, 0)
	default:
		t.Fatalf("recover at the new directory neither clears t1 nor names it and how to clear it:\n%s", r)
	}
	if !strings.Contains(r.Stdout+r.Stderr, "journal") {
		t.Errorf("recover does not say where the journal went:\n%s", r)
	}
	wantTree(t, "the new directory after recover --base-gone", fresh, snapshot(t, x.base, nil))
	// Settled now: past any grace, gc removes it.
	wantCode(t, x.airlock("gc", "--older-than", "0"), 0)
	if testbin.Exists(filepath.Join(x.state, "tx", "t1")) {
		t.Errorf("t1 is still kept after it was cleared and gc --older-than 0 ran")
	}
	if r := x.airlock("recover", "--workdir", x.base, "--base-gone"); r.Code != 125 {
		t.Errorf("a second --base-gone over a directory with nothing recorded elsewhere: %v", r)
	}
}
