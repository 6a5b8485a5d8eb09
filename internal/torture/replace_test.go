package torture

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// replaceWorld is a base with one file, f, that a transaction rewrites or
// deletes.
func replaceWorld(t *testing.T, del bool) (*world, string) {
	t.Helper()
	w := newWorld(t)
	check(t, os.WriteFile(filepath.Join(w.base, "f"), []byte("base\n"), 0o644))
	check(t, os.WriteFile(filepath.Join(w.base, "other"), []byte("untouched\n"), 0o644))
	staged := w.open("x")
	if del {
		check(t, os.Remove(filepath.Join(staged, "f")))
	} else {
		check(t, os.WriteFile(filepath.Join(staged, "f"), []byte("agent\n"), 0o644))
	}
	return w, staged
}

// TestEditBetweenRecheckAndReplace makes the window the outside attack
// found deterministic: a writer opened the base file before the commit,
// the commit re-checks the path (pause point guard:1), the writer appends
// through its descriptor and closes it, and the commit replaces (or
// deletes) the path. The edit reached the old file after the last look at
// it; it must not vanish: the commit refuses and the edit is in the base or
// kept in the transaction's state, at a place the refusal names.
func TestEditBetweenRecheckAndReplace(t *testing.T) {
	for _, del := range []bool{false, true} {
		name := map[bool]string{false: "rewrite", true: "delete"}[del]
		t.Run(name, func(t *testing.T) {
			w, _ := replaceWorld(t, del)
			fh, err := os.OpenFile(filepath.Join(w.base, "f"), os.O_WRONLY|os.O_APPEND, 0)
			check(t, err)
			defer fh.Close()
			const edit = "an edit made after the commit's last look at the file\n"
			r := w.commitPausedAt("guard:1", "x", func() {
				_, err = fh.WriteString(edit)
				check(t, err)
				check(t, fh.Close())
			})
			wantRefusal(t, r, "BaseDrift")
			b, _ := os.ReadFile(filepath.Join(w.base, "f"))
			if strings.Contains(string(b), edit) {
				return
			}
			if string(b) != "base\n" {
				t.Fatalf("after the refusal f holds %q, want the base or the base with the edit", b)
			}
			kept := keptCopy(t, w, edit)
			if kept == "" {
				t.Fatalf("the edit is in neither the base nor the transaction's state: lost (%v)", r)
			}
			if !strings.Contains(r.Stderr, filepath.Dir(kept)) && !strings.Contains(r.Stderr, kept) {
				t.Errorf("the edit was kept in %s, but the refusal does not say where: %v", kept, r)
			}
			// Nothing of the commit is left in the base.
			ents, _ := os.ReadDir(w.base)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".airlock-") {
					t.Errorf("temporary entry %s left in the base", e.Name())
				}
			}
		})
	}
}

// keptCopy finds a file in the state directory that holds s.
func keptCopy(t *testing.T, w *world, s string) string {
	t.Helper()
	found := ""
	filepath.Walk(w.state, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && !strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".jsonl") {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), s) {
				found = p
			}
		}
		return nil
	})
	return found
}

// TestWriterHoldingFileAcrossCommit: a process holds a base file open for
// writing while a commit replaces or deletes that file. What it writes
// after the commit would go to a file no longer in the tree, so the commit
// is refused, naming the process, and the very file it holds is back at its
// path: its later writes land in the base. Once it closes the file, the
// commit goes through.
func TestWriterHoldingFileAcrossCommit(t *testing.T) {
	for _, del := range []bool{false, true} {
		name := map[bool]string{false: "rewrite", true: "delete"}[del]
		t.Run(name, func(t *testing.T) {
			w, _ := replaceWorld(t, del)
			full := filepath.Join(w.base, "f")
			fh, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND, 0)
			check(t, err)
			defer fh.Close()
			var held syscall.Stat_t
			check(t, syscall.Fstat(int(fh.Fd()), &held))
			r := w.airlock("commit", "x")
			wantRefusal(t, r, "BaseDrift")
			if !strings.Contains(r.Stderr, "process "+strconv.Itoa(os.Getpid())) {
				t.Errorf("the refusal does not name the writing process %d: %v", os.Getpid(), r)
			}
			var now syscall.Stat_t
			check(t, syscall.Lstat(full, &now))
			if now.Ino != held.Ino || now.Dev != held.Dev {
				t.Fatalf("f is inode %d after the refused commit, want the very file the writer holds (%d)", now.Ino, held.Ino)
			}
			_, err = fh.WriteString("written after the refused commit\n")
			check(t, err)
			check(t, fh.Close())
			if b, _ := os.ReadFile(full); string(b) != "base\nwritten after the refused commit\n" {
				t.Fatalf("f holds %q: the writer's later write did not land in the base", b)
			}
			for _, e := range mustReadDir(t, w.base) {
				if strings.HasPrefix(e, ".airlock-") {
					t.Errorf("temporary entry %s left in the base", e)
				}
			}
			// The base moved (the write): the agent's change is now a
			// merge or drift, never a silent overwrite; without the
			// writer the commit is decided on content alone.
			r = w.airlock("commit", "x")
			if r.Code == 0 {
				b, _ := os.ReadFile(full)
				if del || !strings.Contains(string(b), "agent") {
					t.Fatalf("commit after the writer closed: %q, %v", b, r)
				}
			} else if r.Code != 75 {
				t.Fatalf("commit after the writer closed: %v", r)
			}
		})
	}
}

func mustReadDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	check(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestWriterKeepsWritingAcrossRefusedCommit: a logger holds a base file
// open for appending and writes to it between the commit's last look at
// the path and its replacement, and again after the commit has ended. The
// commit refuses; the rollback puts the very file the logger holds back at
// its path (it is never replaced by a copy), so every line it wrote, before
// and after, is in the base.
func TestWriterKeepsWritingAcrossRefusedCommit(t *testing.T) {
	w, _ := replaceWorld(t, false)
	full := filepath.Join(w.base, "f")
	fh, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND, 0)
	check(t, err)
	defer fh.Close()
	r := w.commitPausedAt("guard:1", "x", func() {
		_, err = fh.WriteString("during\n")
		check(t, err)
	})
	wantRefusal(t, r, "BaseDrift")
	_, err = fh.WriteString("after\n")
	check(t, err)
	var held, now syscall.Stat_t
	check(t, syscall.Fstat(int(fh.Fd()), &held))
	check(t, syscall.Lstat(full, &now))
	if now.Ino != held.Ino {
		t.Fatalf("f is another file after the rollback (inode %d, the logger holds %d): its writes go nowhere", now.Ino, held.Ino)
	}
	if b, _ := os.ReadFile(full); string(b) != "base\nduring\nafter\n" {
		t.Fatalf("f holds %q, want every line the logger wrote", b)
	}
	if !strings.Contains(r.Stderr, "the very file is back in place") {
		t.Errorf("the refusal does not say the file was kept with the other process's writes: %v", r)
	}
}

// TestChmodDuringCommitSurvives: someone makes a base file executable
// between the commit's last look and its replacement. The commit refuses
// and their chmod is still there, on the file, with its content.
func TestChmodDuringCommitSurvives(t *testing.T) {
	w, _ := replaceWorld(t, false)
	full := filepath.Join(w.base, "f")
	wantRefusal(t, w.commitPausedAt("guard:1", "x", func() {
		check(t, os.Chmod(full, 0o755))
	}), "BaseDrift")
	fi, err := os.Stat(full)
	check(t, err)
	if fi.Mode().Perm() != 0o755 {
		t.Fatalf("f has mode %v after the refused commit, want the 0755 someone set during it", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(full); string(b) != "base\n" {
		t.Fatalf("f holds %q", b)
	}
}

// TestModeOnlyRollbackKeepsTheFile: a commit that changes only a file's
// mode does so in place; when the commit then rolls back (another path
// drifted), the mode is set back on that very file — a process holding it
// open keeps writing into the tree.
func TestModeOnlyRollbackKeepsTheFile(t *testing.T) {
	w := newWorld(t)
	check(t, os.WriteFile(filepath.Join(w.base, "a.log"), []byte("log\n"), 0o644))
	check(t, os.WriteFile(filepath.Join(w.base, "z"), []byte("z\n"), 0o644))
	staged := w.open("m")
	check(t, os.Chmod(filepath.Join(staged, "a.log"), 0o600))
	check(t, os.WriteFile(filepath.Join(staged, "z"), []byte("agent\n"), 0o644))
	full := filepath.Join(w.base, "a.log")
	fh, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND, 0)
	check(t, err)
	defer fh.Close()
	// The mode change is applied before z is re-checked: drift on z then
	// rolls the mode change back.
	r := w.commitPausedAt("guard:2", "m", func() {
		check(t, os.WriteFile(filepath.Join(w.base, "z"), []byte("human\n"), 0o644))
	})
	if r.Code != 75 {
		t.Fatalf("want a refusal: %v", r)
	}
	var held, now syscall.Stat_t
	check(t, syscall.Fstat(int(fh.Fd()), &held))
	check(t, syscall.Lstat(full, &now))
	if now.Ino != held.Ino {
		t.Fatalf("a.log was replaced by a copy in the rollback (inode %d, held %d)", now.Ino, held.Ino)
	}
	if now.Mode&0o777 != 0o644 {
		t.Fatalf("a.log has mode %o after the rollback, want 0644", now.Mode&0o777)
	}
	if b, _ := os.ReadFile(filepath.Join(w.base, "z")); string(b) != "human\n" {
		t.Fatalf("z holds %q, want the human's edit", b)
	}
}

// TestFileAddedInNewDirectoryDuringApply: someone saves a file inside a
// directory the apply has just created, and edits another path; the
// commit refuses BaseDrift (never exit 125), the directory stays with
// their file, everything else is as before, and no temporary entry is left.
func TestFileAddedInNewDirectoryDuringApply(t *testing.T) {
	w := newWorld(t)
	check(t, os.WriteFile(filepath.Join(w.base, "a"), []byte("a\n"), 0o644))
	check(t, os.WriteFile(filepath.Join(w.base, "z"), []byte("z\n"), 0o644))
	staged := w.open("d")
	check(t, os.MkdirAll(filepath.Join(staged, "d"), 0o755))
	check(t, os.WriteFile(filepath.Join(staged, "d", "f"), []byte("f\n"), 0o644))
	check(t, os.WriteFile(filepath.Join(staged, "a"), []byte("agent a\n"), 0o644))
	check(t, os.WriteFile(filepath.Join(staged, "z"), []byte("agent z\n"), 0o644))
	// Order of creation: a, d, d/f, z: pause once d/f is there.
	r := w.commitPausedAt("apply:3", "d", func() {
		check(t, os.WriteFile(filepath.Join(w.base, "d", "notes"), []byte("mine\n"), 0o644))
		check(t, os.WriteFile(filepath.Join(w.base, "z"), []byte("human z\n"), 0o644))
	})
	wantRefusal(t, r, "BaseDrift")
	for f, want := range map[string]string{"a": "a\n", "z": "human z\n", "d/notes": "mine\n"} {
		if b, _ := os.ReadFile(filepath.Join(w.base, f)); string(b) != want {
			t.Errorf("%s holds %q, want %q", f, b, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(w.base, "d", "f")); err == nil {
		t.Error("d/f, the refused commit's, is in the base")
	}
	for _, dir := range []string{w.base, filepath.Join(w.base, "d")} {
		for _, n := range mustReadDir(t, dir) {
			if strings.HasPrefix(n, ".airlock-") {
				t.Errorf("temporary entry %s left in %s", n, dir)
			}
		}
	}
}
