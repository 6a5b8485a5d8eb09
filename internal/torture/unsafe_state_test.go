package torture

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A plant makes one file or directory of the state unsafe and returns how
// to put it back.
type plant func(t *testing.T, p string) (undo func())

// relinkTo moves p elsewhere and leaves a symlink to it in its place: the
// very same bytes, reached through a symlink.
func relinkTo(t *testing.T, p string) func() {
	t.Helper()
	elsewhere := filepath.Join(t.TempDir(), filepath.Base(p))
	check(t, os.Rename(p, elsewhere))
	check(t, os.Symlink(elsewhere, p))
	return func() {
		check(t, os.Remove(p))
		check(t, os.Rename(elsewhere, p))
	}
}

func chmodTo(mode os.FileMode) plant {
	return func(t *testing.T, p string) func() {
		t.Helper()
		fi, err := os.Lstat(p)
		check(t, err)
		check(t, os.Chmod(p, mode))
		return func() { check(t, os.Chmod(p, fi.Mode().Perm())) }
	}
}

func chownToNobody(t *testing.T, p string) func() {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	check(t, os.Lchown(p, nobody, nobody))
	return func() { check(t, os.Lchown(p, os.Getuid(), os.Getgid())) }
}

// TestUnsafeJournal makes the journal of a half-applied commit unsafe in
// each way state can be — a symlink (to the very same bytes, so that only
// the state checks can tell), another user's, writable by others — and
// runs recover: it must refuse, naming what is unsafe, before it reads a
// backup into the base; once the state is put back, it restores the base.
func TestUnsafeJournal(t *testing.T) {
	cases := []struct {
		name   string
		victim func(jdir string) string
		plant  plant
	}{
		{"journal directory is a symlink", func(j string) string { return j }, relinkTo},
		{"journal file is a symlink", func(j string) string { return filepath.Join(j, "journal.json") }, relinkTo},
		{"backup directory is a symlink", func(j string) string { return filepath.Join(j, "backup") }, relinkTo},
		{"backup is a symlink", thirdBackup, relinkTo},
		{"journal directory is world-writable", func(j string) string { return j }, chmodTo(0o777)},
		{"backup is group-writable", thirdBackup, chmodTo(0o660)},
		{"journal file owned by another user", func(j string) string { return filepath.Join(j, "journal.json") }, chownToNobody},
		{"backup owned by another user", thirdBackup, chownToNobody},
		{"backup directory owned by another user", func(j string) string { return filepath.Join(j, "backup") }, chownToNobody},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			orig := hostileBase(w, w.outside())
			staged := w.open("t1")
			for _, f := range []string{"e", "d/a", "d/b", "d/sub/c"} {
				check(t, os.WriteFile(filepath.Join(staged, f), []byte("new "+f+"\n"), 0o644))
			}
			r := w.airlockEnv([]string{"AIRLOCK_TEST_FAULT=apply:3"}, "commit", "t1")
			if r.Signal != syscall.SIGKILL {
				t.Fatalf("the commit did not stop at apply:3: %v", r)
			}
			victim := c.victim(filepath.Join(w.txDir("t1"), "journal"))
			undo := c.plant(t, victim)
			before := snapshot(t, w.base)
			r = w.airlock("recover", "--workdir", w.base)
			wantFailure(t, r, victim)
			if !strings.Contains(r.Stderr, "do not remove it") || !strings.Contains(r.Stderr, "airlock recover") {
				t.Fatalf("the refusal should say to put the journal right, not remove it, and run recover again: %s", r.Stderr)
			}
			if got := snapshot(t, w.base); !got.equal(before) {
				t.Fatalf("recover acted on an unsafe journal: the base changed:\n%s", before.diff(got, 10))
			}
			undo()
			w.must("recover", "--workdir", w.base)
			w.beforeOrAfter(orig, nil)
		})
	}
}

// thirdBackup is the backup of d/sub/c, which the killed apply had already
// overwritten: restoring it reads the backup.
func thirdBackup(jdir string) string {
	return filepath.Join(jdir, "backup", "000002")
}

// TestUnsafeStaleJournal leaves a journal that no process is applying (its
// commit died before marking the base in flight) in a state airlock did not
// write: commit must refuse it, naming it, rather than remove what it
// leads to or belongs to another user; put right, the commit goes through.
func TestUnsafeStaleJournal(t *testing.T) {
	cases := map[string]plant{
		"symlink": func(t *testing.T, p string) func() {
			outside := filepath.Join(t.TempDir(), "someone-elses")
			check(t, os.MkdirAll(filepath.Join(outside, "backup"), 0o700))
			check(t, os.WriteFile(filepath.Join(outside, "journal.json"), []byte("{}"), 0o600))
			check(t, os.Symlink(outside, p))
			return func() { check(t, os.Remove(p)) }
		},
		"owned by another user": func(t *testing.T, p string) func() {
			check(t, os.MkdirAll(filepath.Join(p, "backup"), 0o700))
			return chownToNobody(t, p)
		},
		"backup writable by others": func(t *testing.T, p string) func() {
			check(t, os.MkdirAll(filepath.Join(p, "backup"), 0o700))
			check(t, os.WriteFile(filepath.Join(p, "backup", "000000"), []byte("x"), 0o600))
			check(t, os.Chmod(filepath.Join(p, "backup", "000000"), 0o666))
			return func() { check(t, os.RemoveAll(p)) }
		},
	}
	for name, pl := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			orig := hostileBase(w, w.outside())
			staged := w.open("t1")
			check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
			jdir := filepath.Join(w.txDir("t1"), "journal")
			undo := pl(t, jdir)
			target, _ := os.Readlink(jdir)
			around := w.world()
			r := w.airlock("commit", "t1")
			wantFailure(t, r, jdir)
			w.untouched(around)
			if got := snapshot(t, w.base); !got.equal(orig) {
				t.Fatalf("commit went ahead over an unsafe journal:\n%s", orig.diff(got, 10))
			}
			if target != "" {
				if _, err := os.Stat(filepath.Join(target, "journal.json")); err != nil {
					t.Fatalf("commit acted on what the planted journal symlink leads to: %v", err)
				}
			}
			undo()
			w.must("commit", "t1")
			if got := w.status("t1"); got != "committed" {
				t.Fatalf("status after the journal was put right = %s, want committed", got)
			}
		})
	}
}

// TestUnsafeAppliedJournal: undo reverses what a commit's applied journal
// says it did; a journal reached through a symlink or another user's is
// refused, naming it, and the base is left alone.
func TestUnsafeAppliedJournal(t *testing.T) {
	cases := map[string]plant{
		"symlink":               relinkTo,
		"owned by another user": chownToNobody,
		"writable by others":    chmodTo(0o666),
	}
	for name, pl := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			hostileBase(w, w.outside())
			staged := w.open("t1")
			check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
			w.must("commit", "t1")
			committed := snapshot(t, w.base)
			applied := filepath.Join(w.txDir("t1"), "applied.json")
			undo := pl(t, applied)
			r := w.airlock("undo", "t1", "--workdir", w.base)
			wantFailure(t, r, applied)
			if got := snapshot(t, w.base); !got.equal(committed) {
				t.Fatalf("undo acted on an unsafe applied journal: the base changed:\n%s", committed.diff(got, 10))
			}
			undo()
			w.must("undo", "t1", "--workdir", w.base)
		})
	}
}
