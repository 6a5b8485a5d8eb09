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
			pause := t.TempDir()
			p := w.start([]string{"AIRLOCK_TEST_PAUSE=guard:1:" + pause}, "commit", "x")
			waitFile(t, filepath.Join(pause, "reached"), p)
			const edit = "an edit made after the commit's last look at the file\n"
			_, err = fh.WriteString(edit)
			check(t, err)
			check(t, fh.Close())
			check(t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o644))
			r := p.WaitSettled()
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
