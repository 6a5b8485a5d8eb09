//go:build linux

package changeset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// The attacks below are an agent rearranging its staged tree after the
// commit measured it: between the scan and the freeze, or between two files
// of the freeze (renameat2 RENAME_EXCHANGE, as an agent timing the freeze
// with inotify would). Each must end in a *StagedChangedError naming the
// path, with nothing from outside the staged tree in the object store.

// attackFixture is a staged tree whose directory d holds two changed files,
// d/a and d/b, and an outside directory holding a secret under the same
// names.
func attackFixture(t *testing.T) (f *fixture, outside string, set *Set) {
	t.Helper()
	f = newFixture(t, []node{dir("d", 0o755), file("d/a", "a at open", 0o644), file("d/b", "b at open", 0o644)})
	must(t, os.WriteFile(f.s("d/a"), []byte("a by the agent"), 0o644))
	must(t, os.WriteFile(f.s("d/b"), []byte("b by the agent"), 0o644))
	outside = t.TempDir()
	for _, n := range []string{"a", "b"} {
		// The same size as the staged files, so that only the swap,
		// not the size, can tell them apart.
		must(t, os.WriteFile(filepath.Join(outside, n), []byte("SECRET-SECRET!"), 0o600))
	}
	set = f.diff(t)
	if got := set.Paths(); strings.Join(got, ",") != "d/a,d/b" {
		t.Fatalf("change set %q, want d/a and d/b", got)
	}
	return f, outside, set
}

// wantStagedChanged checks that err is a *StagedChangedError for rel and that
// no object holds secret.
func wantStagedChanged(t *testing.T, err error, rel, objects, secret string) {
	t.Helper()
	var sc *StagedChangedError
	if !errors.As(err, &sc) {
		t.Fatalf("Freeze = %v, want a *StagedChangedError", err)
	}
	if sc.Path != rel {
		t.Errorf("refused %q, want %q", sc.Path, rel)
	}
	if !strings.Contains(err.Error(), rel) || !strings.Contains(err.Error(), "try again") {
		t.Errorf("error %q does not name %s and say what to do", err, rel)
	}
	noObjectHolds(t, objects, secret)
}

func noObjectHolds(t *testing.T, objects, secret string) {
	t.Helper()
	ents, err := os.ReadDir(objects)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	must(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(objects, e.Name()))
		must(t, err)
		if secret != "" && strings.Contains(string(b), secret) {
			t.Fatalf("object %s holds %q, read from outside the staged tree", e.Name(), b)
		}
		if strings.HasPrefix(e.Name(), ".freeze-") {
			t.Errorf("temporary %s left in the object store", e.Name())
		}
	}
}

func setHook(t *testing.T, fn func(rel string)) {
	t.Helper()
	testHookOpened = fn
	t.Cleanup(func() { testHookOpened = nil })
}

func exchange(t *testing.T, a, b string) {
	t.Helper()
	must(t, unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE))
}

func TestFreezeRefusesDirectorySwappedForSymlink(t *testing.T) {
	t.Run("before-freeze", func(t *testing.T) {
		f, outside, set := attackFixture(t)
		must(t, os.Rename(f.s("d"), f.s("d.real")))
		must(t, os.Symlink(outside, f.s("d")))
		objects := filepath.Join(t.TempDir(), "objects")
		err := Freeze(context.Background(), set, f.staged, objects)
		wantStagedChanged(t, err, "d/a", objects, "SECRET")
	})
	t.Run("between-two-files", func(t *testing.T) {
		f, outside, set := attackFixture(t)
		must(t, os.Symlink(outside, f.s("swap")))
		setHook(t, func(rel string) {
			if rel == "d/a" {
				exchange(t, f.s("d"), f.s("swap"))
			}
		})
		objects := filepath.Join(t.TempDir(), "objects")
		err := Freeze(context.Background(), set, f.staged, objects)
		wantStagedChanged(t, err, "d/b", objects, "SECRET")
	})
	t.Run("to-dev", func(t *testing.T) {
		// d/null is a changed regular file; /dev/null is a device whose
		// read would freeze an empty file in its place.
		f := newFixture(t, []node{dir("d", 0o755), file("d/null", "x", 0o644)})
		must(t, os.WriteFile(f.s("d/null"), []byte("agent"), 0o644))
		set := f.diff(t)
		must(t, os.Rename(f.s("d"), f.s("d.real")))
		must(t, os.Symlink("/dev", f.s("d")))
		objects := filepath.Join(t.TempDir(), "objects")
		err := Freeze(context.Background(), set, f.staged, objects)
		wantStagedChanged(t, err, "d/null", objects, "")
		if _, err := os.Lstat(ObjectPath(objects, manifest.HashBytes(nil))); err == nil {
			t.Fatal("an empty object was frozen: /dev/null was read")
		}
	})
}

// TestFreezeRefusesSpecialFileSwap puts a FIFO, a device node or a
// directory where the scan measured a changed regular file. The freeze
// neither blocks nor reads it.
func TestFreezeRefusesSpecialFileSwap(t *testing.T) {
	swaps := map[string]func(t *testing.T, p string){
		"fifo": func(t *testing.T, p string) { must(t, syscall.Mkfifo(p, 0o644)) },
		"dir":  func(t *testing.T, p string) { must(t, os.Mkdir(p, 0o755)) },
		"symlink-to-secret": func(t *testing.T, p string) {
			secret := filepath.Join(t.TempDir(), "secret")
			must(t, os.WriteFile(secret, []byte("SECRET"), 0o600))
			must(t, os.Symlink(secret, p))
		},
		"device": func(t *testing.T, p string) {
			if os.Geteuid() != 0 {
				t.Skip("mknod of a device node needs root")
			}
			var st syscall.Stat_t
			must(t, syscall.Stat("/dev/null", &st))
			must(t, syscall.Mknod(p, syscall.S_IFCHR|0o666, int(st.Rdev)))
		},
	}
	for name, swap := range swaps {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, []node{file("f", "at open", 0o644)})
			must(t, os.WriteFile(f.s("f"), []byte("by the agent"), 0o644))
			set := f.diff(t)
			must(t, os.Remove(f.s("f")))
			swap(t, f.s("f"))
			objects := filepath.Join(t.TempDir(), "objects")
			done := make(chan error, 1)
			go func() { done <- Freeze(context.Background(), set, f.staged, objects) }()
			select {
			case err := <-done:
				wantStagedChanged(t, err, "f", objects, "SECRET")
			case <-time.After(time.Minute):
				t.Fatal("Freeze blocked on what was swapped in")
			}
			if _, err := os.Lstat(ObjectPath(objects, manifest.HashBytes(nil))); err == nil {
				t.Fatal("an empty object was frozen: what was swapped in was read")
			}
		})
	}
}

// TestFreezeRefusesFileChangedWhileRead writes to a staged file between
// the freeze's open and its read: it grows (only size+1 bytes are ever
// read), shrinks, or is rewritten in place at the same size.
func TestFreezeRefusesFileChangedWhileRead(t *testing.T) {
	const content = "by the agent"
	changes := map[string]func(t *testing.T, p string){
		"grows": func(t *testing.T, p string) {
			fh, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			_, err = fh.Write(make([]byte, 1<<20))
			must(t, err)
			must(t, fh.Close())
		},
		"shrinks": func(t *testing.T, p string) { must(t, os.Truncate(p, 3)) },
		"rewritten": func(t *testing.T, p string) {
			fh, err := os.OpenFile(p, os.O_WRONLY, 0)
			must(t, err)
			_, err = fh.WriteAt([]byte(strings.ToUpper(content)), 0)
			must(t, err)
			must(t, fh.Close())
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, []node{file("f", "at open", 0o644)})
			must(t, os.WriteFile(f.s("f"), []byte(content), 0o644))
			// An old mtime, so that the write below moves it
			// whatever the clock's granularity.
			must(t, os.Chtimes(f.s("f"), oldTime, oldTime))
			set := f.diff(t)
			setHook(t, func(rel string) { change(t, f.s(rel)) })
			objects := filepath.Join(t.TempDir(), "objects")
			err := Freeze(context.Background(), set, f.staged, objects)
			wantStagedChanged(t, err, "f", objects, "")
			ents, _ := os.ReadDir(objects)
			if len(ents) != 0 {
				t.Errorf("objects %v frozen from a file that changed while read", ents)
			}
		})
	}
}

// TestFreezeRefusesReplacedFile: the same bytes in another inode, or a
// write after the scan, are not the file the change set measured.
func TestFreezeRefusesReplacedFile(t *testing.T) {
	f := newFixture(t, []node{file("f", "at open", 0o644), file("g", "at open", 0o644)})
	must(t, os.WriteFile(f.s("f"), []byte("by the agent"), 0o644))
	must(t, os.WriteFile(f.s("g"), []byte("by the agent"), 0o644))
	must(t, os.Chtimes(f.s("g"), oldTime, oldTime))
	set := f.diff(t)
	must(t, os.WriteFile(f.s("f.new"), []byte("by the agent"), 0o644))
	must(t, os.Rename(f.s("f.new"), f.s("f")))
	objects := filepath.Join(t.TempDir(), "objects")
	err := Freeze(context.Background(), set, f.staged, objects)
	wantStagedChanged(t, err, "f", objects, "")
	if !strings.Contains(err.Error(), "replaced by another file") {
		t.Errorf("error %q does not say the file was replaced", err)
	}

	set = f.diff(t)
	must(t, os.WriteFile(f.s("g"), []byte("BY THE AGENT"), 0o644))
	err = Freeze(context.Background(), set, f.staged, objects)
	wantStagedChanged(t, err, "g", objects, "")
}

// TestDiffReadsOnlyTheStagedTree: the byte comparisons of the scan itself
// go through the same open, so a staged directory swapped for a symlink
// while the diff runs is never read through; the path counts as changed
// and the freeze refuses it.
func TestDiffReadsOnlyTheStagedTree(t *testing.T) {
	f := newFixture(t, []node{dir("d", 0o755), file("d/a", "same size", 0o644)})
	// Same size, stat moved: the diff must compare bytes.
	must(t, os.WriteFile(f.s("d/a"), []byte("SAME SIZE"), 0o644))
	now := walk(t, f.staged)
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "a"), []byte("same size"), 0o600))
	must(t, os.Rename(f.s("d"), f.s("d.real")))
	must(t, os.Symlink(outside, f.s("d")))
	set, err := Diff(context.Background(), Input{Base: f.baseM, StagedOpen: f.open, Staged: now, BaseDir: f.base, StagedDir: f.staged})
	must(t, err)
	// Read through the symlink, the outside file equals the base file
	// and the change would vanish from the set.
	if got := strings.Join(set.Paths(), ","); got != "d/a" {
		t.Fatalf("change set %q, want d/a", got)
	}
	objects := filepath.Join(t.TempDir(), "objects")
	wantStagedChanged(t, Freeze(context.Background(), set, f.staged, objects), "d/a", objects, "")
}

// TestOpenOriginalReadsOnlyTheMeasuredFile: the base side of a byte
// comparison or of a patch is opened beneath the base, following no
// symlink, never a FIFO (an open that would block) or a device, and only
// while it is the file measured.
func TestOpenOriginalReadsOnlyTheMeasuredFile(t *testing.T) {
	f := newFixture(t, []node{dir("d", 0o755), file("d/f", "original", 0o644)})
	e, err := manifest.Lstat(f.b("d/f"))
	must(t, err)
	e.Path = "d/f"
	root := openRoot(t, f.base)
	fh, err := OpenOriginal(root, e)
	if err != nil {
		t.Fatalf("the measured file: %v", err)
	}
	fh.Close()

	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "f"), []byte("SECRET"), 0o600))
	must(t, os.Rename(f.b("d"), f.b("d.moved")))
	must(t, os.Symlink(outside, f.b("d")))
	if fh, err := OpenOriginal(root, e); err == nil {
		fh.Close()
		t.Fatal("read through a directory swapped for a symlink")
	}
	must(t, os.Remove(f.b("d")))
	must(t, os.Mkdir(f.b("d"), 0o755))
	must(t, unix.Mkfifo(f.b("d/f"), 0o644))
	done := make(chan error, 1)
	go func() {
		fh, err := OpenOriginal(root, e)
		if err == nil {
			fh.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO was opened as the original")
		}
	case <-time.After(time.Minute):
		t.Fatal("opening a FIFO in the base blocked")
	}
}

func openRoot(t *testing.T, dir string) *safefs.Root {
	t.Helper()
	r, err := safefs.OpenRoot(dir)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}
