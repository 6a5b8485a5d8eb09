package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/fsclock"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/stage/stagetest"
)

// The test trees are stagetest's, shared with the pool's refresh tests.
var (
	skipExcluded = stagetest.SkipExcluded
	buildTree    = stagetest.BuildTree
	setMtime     = stagetest.SetMtime
	facts        = stagetest.Facts
)

type fact = stagetest.Fact

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// stageDir returns a path for a staged workspace that is removed with
// Remove when the test ends (t.TempDir alone cannot remove read-only
// directories unless run as root).
func stageDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "staged")
	t.Cleanup(func() {
		if err := removeTree(context.Background(), dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

func TestGet(t *testing.T) {
	tests := []struct {
		name, want, wantErr string
	}{
		{name: "copy", want: "copy"},
		{name: "auto", want: "copy"},
		{name: "", want: "copy"},
		{name: "reflink", want: "reflink"},
		{name: "overlay", want: "overlay"},
		{name: "worktree", want: "worktree"},
		{name: "rsync", wantErr: "unknown backend rsync (want auto, copy, reflink, overlay or worktree)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Get(tt.name)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Get(%q) error = %v, want %q", tt.name, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Name() != tt.want {
				t.Errorf("Get(%q).Name() = %q, want %q", tt.name, b.Name(), tt.want)
			}
			if ok, reason := b.Supported(t.TempDir()); !ok && b.Name() == Copy {
				t.Errorf("copy not supported: %s", reason)
			}
		})
	}
}

func TestCopyStagesTree(t *testing.T) {
	base := buildTree(t)
	dir := stageDir(t)
	var mu sync.Mutex
	var calls [][2]int
	res, err := copyBackend{}.Stage(t.Context(), Request{
		Base: base, Dir: dir, Skip: skipExcluded,
		Progress: func(done, total int) {
			mu.Lock()
			calls = append(calls, [2]int{done, total})
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	want := facts(t, base, skipExcluded)
	got := facts(t, dir, nil)
	delete(want, "pipe")
	delete(want, "a/sock")
	t.Run("same surface", func(t *testing.T) {
		for p, w := range want {
			g, ok := got[p]
			switch {
			case !ok:
				t.Errorf("%q not staged", p)
			case g.Type != w.Type:
				t.Errorf("%q: type %v, want %v", p, g.Type, w.Type)
			case g.Data != w.Data:
				t.Errorf("%q: content or target differs (%d bytes, want %d)", p, len(g.Data), len(w.Data))
			case g.Type != fs.ModeSymlink && g.Mode != w.Mode:
				t.Errorf("%q: mode %v, want %v", p, g.Mode, w.Mode)
			case g.Mtime != w.Mtime:
				t.Errorf("%q: mtime %d, want %d", p, g.Mtime, w.Mtime)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%q staged but not in the surface", p)
			}
		}
	})
	t.Run("no shared inode", func(t *testing.T) {
		for p, g := range got {
			if g.Ino == want[p].Ino {
				t.Errorf("%q shares inode %d with the base", p, g.Ino)
			}
		}
	})
	t.Run("diff -r", func(t *testing.T) {
		out, err := exec.Command("diff", "-r", "--no-dereference", "-x", "pipe", "-x", "sock", "-x", "node_modules", "-x", "*.log", base, dir).CombinedOutput()
		if err != nil {
			t.Fatalf("diff -r: %v\n%s", err, out)
		}
	})
	t.Run("base manifest", func(t *testing.T) {
		var paths []string
		for _, e := range res.Base.Entries {
			paths = append(paths, e.Path)
			now, err := manifest.Lstat(filepath.Join(base, e.Path))
			if err != nil {
				t.Fatal(err)
			}
			if now.Path = e.Path; !manifest.SameStat(e, now) {
				t.Errorf("Base entry %q = %+v, base has %+v", e.Path, e, now)
			}
		}
		var wantPaths []string
		for p := range facts(t, base, skipExcluded) {
			if p != "" {
				wantPaths = append(wantPaths, p)
			}
		}
		slices.Sort(wantPaths)
		if !slices.Equal(paths, wantPaths) {
			t.Errorf("Base paths = %q\nwant %q", paths, wantPaths)
		}
		for _, p := range []string{"pipe", "a/sock"} {
			if e, ok := res.Base.Lookup(p); !ok || e.Kind != manifest.KindOther {
				t.Errorf("Base has no KindOther entry for %s: %+v", p, e)
			}
		}
	})
	t.Run("staged manifest", func(t *testing.T) {
		now, err := manifest.Walk(t.Context(), dir, manifest.WalkOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(now.Entries) != len(res.Staged.Entries) {
			t.Fatalf("Staged has %d entries, the staged tree %d", len(res.Staged.Entries), len(now.Entries))
		}
		for i, e := range res.Staged.Entries {
			if !manifest.SameStat(e, now.Entries[i]) || e.Path != now.Entries[i].Path {
				t.Errorf("Staged entry %+v, staged tree has %+v", e, now.Entries[i])
			}
		}
	})
	t.Run("warnings", func(t *testing.T) {
		want := []string{
			"skipped a socket a/sock: FIFOs, sockets and device nodes are not copied",
			"skipped a FIFO pipe: FIFOs, sockets and device nodes are not copied",
		}
		if !slices.Equal(res.Warnings, want) {
			t.Errorf("Warnings = %q, want %q", res.Warnings, want)
		}
	})
	t.Run("progress", func(t *testing.T) {
		total := len(want) - 1 // the root is not counted
		if len(calls) == 0 || calls[len(calls)-1] != [2]int{total, total} {
			t.Fatalf("progress calls %v, want the last to be [%d %d]", calls, total, total)
		}
		for i := 1; i < len(calls); i++ {
			if calls[i][0] < calls[i-1][0] {
				t.Errorf("progress went backwards: %v", calls)
			}
		}
	})
	t.Run("remove", func(t *testing.T) {
		if err := (copyBackend{}).Remove(t.Context(), dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("staged dir still there: %v", err)
		}
		if err := (copyBackend{}).Remove(t.Context(), dir); err != nil {
			t.Fatalf("removing a removed dir: %v", err)
		}
		if len(facts(t, base, nil)) == 0 {
			t.Fatal("base gone")
		}
	})
}

// setHook sets a test hook for the rest of the test.
func setHook[T any](t *testing.T, p *T, v T) {
	t.Helper()
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

func TestCopyFailures(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, base string, cancel context.CancelFunc)
		wantErr []string
	}{
		{
			name: "unreadable file",
			setup: func(t *testing.T, base string, _ context.CancelFunc) {
				setHook(t, &testHookOpen, func(rel string) error {
					if rel == "secret" {
						return &fs.PathError{Op: "open", Path: rel, Err: syscall.EACCES}
					}
					return nil
				})
			},
			wantErr: []string{"/secret: cannot be read (permission denied); fix its permissions or --exclude it"},
		},
		{
			name: "file vanished after the walk",
			setup: func(t *testing.T, base string, _ context.CancelFunc) {
				setHook(t, &testHookWalked, func() { must(t, os.Remove(filepath.Join(base, "a/b/c/d/deep.txt"))) })
			},
			wantErr: []string{"a/b/c/d/deep.txt: vanished while airlock copied it"},
		},
		{
			name: "file replaced by a symlink after the walk",
			setup: func(t *testing.T, base string, _ context.CancelFunc) {
				setHook(t, &testHookWalked, func() {
					p := filepath.Join(base, "exec.sh")
					must(t, os.Remove(p))
					must(t, os.Symlink("/etc/passwd", p))
				})
			},
			wantErr: []string{"/exec.sh: changed type while airlock copied it"},
		},
		{
			name: "directory replaced by a symlink after the walk",
			setup: func(t *testing.T, base string, _ context.CancelFunc) {
				setHook(t, &testHookWalked, func() {
					must(t, os.Rename(filepath.Join(base, "a/b/c"), filepath.Join(base, "moved")))
					must(t, os.Symlink("../../moved", filepath.Join(base, "a/b/c")))
				})
			},
			wantErr: []string{"/a/b/c/d/deep.txt: changed type while airlock copied it"},
		},
		{
			name: "file keeps changing",
			setup: func(t *testing.T, base string, _ context.CancelFunc) {
				setHook(t, &testHookCopied, func(rel string, _ int) {
					if rel == "big.bin" {
						appendTo(t, filepath.Join(base, rel), "more")
					}
				})
			},
			wantErr: []string{"/big.bin: kept changing while airlock copied it; retry when it is quiet"},
		},
		{
			name: "cancelled while copying",
			setup: func(t *testing.T, base string, cancel context.CancelFunc) {
				setHook(t, &testHookCopied, func(string, int) { cancel() })
			},
			wantErr: []string{"stopped: context canceled"},
		},
		{
			name:    "cancelled before staging",
			setup:   func(t *testing.T, base string, cancel context.CancelFunc) { cancel() },
			wantErr: []string{"context canceled"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := buildTree(t)
			dir := stageDir(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			tt.setup(t, base, cancel)
			res, err := copyBackend{}.Stage(ctx, Request{Base: base, Dir: dir, Skip: skipExcluded})
			if err == nil {
				t.Fatalf("Stage succeeded: %d entries", len(res.Base.Entries))
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if strings.Contains(tt.name, "cancelled") && !errors.Is(err, context.Canceled) {
				t.Errorf("error %v is not context.Canceled", err)
			}
			if _, serr := os.Lstat(dir); !errors.Is(serr, fs.ErrNotExist) {
				t.Errorf("partial staged dir left behind: %v", serr)
			}
		})
	}
}

func TestCopyUnreadableWithoutHook(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode; TestCopyFailures/unreadable_file covers this through a hook")
	}
	base := buildTree(t)
	must(t, os.Chmod(filepath.Join(base, "secret"), 0))
	dir := stageDir(t)
	_, err := copyBackend{}.Stage(t.Context(), Request{Base: base, Dir: dir, Skip: skipExcluded})
	if err == nil || !strings.Contains(err.Error(), "/secret: cannot be read") {
		t.Fatalf("err = %v, want it to name the unreadable file", err)
	}
	if _, serr := os.Lstat(dir); !errors.Is(serr, fs.ErrNotExist) {
		t.Errorf("partial staged dir left behind: %v", serr)
	}
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString(s)
	must(t, err)
	must(t, f.Close())
}

// TestCopyRecordsWhatItCopied changes a file after the walk, or during its
// first copy, and checks that the staged bytes and the base entry both
// describe the file as it is now.
func TestCopyRecordsWhatItCopied(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, p string)
	}{
		{"rewritten between walk and copy", func(t *testing.T, p string) {
			setHook(t, &testHookWalked, func() { must(t, os.WriteFile(p, []byte("rewritten, and longer than before\n"), 0o644)) })
		}},
		{"replaced by rename between walk and copy", func(t *testing.T, p string) {
			setHook(t, &testHookWalked, func() {
				must(t, os.WriteFile(p+".tmp", []byte("new inode\n"), 0o640))
				must(t, os.Rename(p+".tmp", p))
			})
		}},
		{"appended to during the first copy", func(t *testing.T, p string) {
			setHook(t, &testHookCopied, func(rel string, attempt int) {
				if rel == "a/b/c/d/deep.txt" && attempt == 0 {
					appendTo(t, p, "appended\n")
				}
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := buildTree(t)
			dir := stageDir(t)
			p := filepath.Join(base, "a/b/c/d/deep.txt")
			walked, err := manifest.Lstat(p)
			must(t, err)
			tt.setup(t, p)
			res, err := copyBackend{}.Stage(t.Context(), Request{Base: base, Dir: dir, Skip: skipExcluded})
			must(t, err)
			wantData, err := os.ReadFile(p)
			must(t, err)
			gotData, err := os.ReadFile(filepath.Join(dir, "a/b/c/d/deep.txt"))
			must(t, err)
			if !bytes.Equal(gotData, wantData) {
				t.Errorf("staged %q, base has %q", gotData, wantData)
			}
			now, err := manifest.Lstat(p)
			must(t, err)
			e, ok := res.Base.Lookup("a/b/c/d/deep.txt")
			if now.Path = e.Path; !ok || !manifest.SameStat(*e, now) {
				t.Errorf("Base entry %+v, want the copied version %+v", e, now)
			}
			if manifest.SameStat(*e, walked) {
				t.Errorf("Base entry still describes the walked version")
			}
			s, _ := res.Staged.Lookup("a/b/c/d/deep.txt")
			if s.Mode != now.Mode || s.MtimeNs != now.MtimeNs || s.Size != now.Size {
				t.Errorf("staged entry %+v does not match the copied version %+v", s, now)
			}
		})
	}
}

func TestCopyRefusesBadDirs(t *testing.T) {
	base := buildTree(t)
	existing := t.TempDir()
	must(t, os.WriteFile(filepath.Join(existing, "keep"), []byte("keep"), 0o644))
	tests := []struct {
		name, dir, wantErr string
	}{
		{"dir exists", existing, "already exists"},
		{"dir inside base", filepath.Join(base, "staged"), "would lie inside the base"},
		{"dir is base", base, "would lie inside the base"},
		{"relative dir", "staged", "must be absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := copyBackend{}.Stage(t.Context(), Request{Base: base, Dir: tt.dir})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(existing, "keep")); err != nil || string(b) != "keep" {
		t.Errorf("existing dir disturbed: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(base, "staged")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("created a dir inside the base: %v", err)
	}
}

// TestCopyStagedWriteIsVisible checks that a same-size rewrite of a staged
// file right after staging can be seen: its ctime moved (Linux 6.13 and
// later stamp a ctime that was read with a fine-grained clock), or, where
// it fell in staging's last timestamp step, staging recorded the digest of
// the bytes it left, which the rewrite no longer matches.
func TestCopyStagedWriteIsVisible(t *testing.T) {
	base := t.TempDir()
	must(t, os.WriteFile(filepath.Join(base, "f"), []byte("a"), 0o644))
	dir := stageDir(t)
	res, err := copyBackend{}.Stage(t.Context(), clocked(Request{Base: base, Dir: dir}))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("b"), 0o644))
	now, err := manifest.Lstat(filepath.Join(dir, "f"))
	must(t, err)
	e, _ := res.Staged.Lookup("f")
	if now.Path = "f"; manifest.SameStat(*e, now) && (e.Digest == "" || e.Digest == manifest.HashBytes([]byte("b"))) {
		t.Fatalf("a write right after staging left the stat unchanged, and staging recorded no digest that tells: %+v", *e)
	}
}

// TestDigestRacy: staging records the digest of each staged file its
// clock cannot prove unchanged later, and of each base file measured
// within its clock's window of a change; both are the staged bytes' own.
// A clock that proves every fact records none.
func TestDigestRacy(t *testing.T) {
	fine := fsclock.Clock{Type: "test", StoredNs: 1, Measured: true} // a 1 ns window: every ctime of the past is proven
	for _, tt := range []struct {
		name                 string
		state, base          fsclock.Clock
		wantStaged, wantBase bool
	}{
		{"coarse state file system", fsclock.Clock{}, fine, true, false},
		{"coarse base file system", fine, fsclock.Clock{}, false, true},
		{"both coarse", fsclock.Clock{}, fsclock.Clock{}, true, true},
		{"both fine", fine, fine, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(base, "d"), 0o755))
			must(t, os.WriteFile(filepath.Join(base, "d/f"), []byte("data"), 0o644))
			must(t, os.Symlink("d/f", filepath.Join(base, "l")))
			dir := stageDir(t)
			res, err := copyBackend{}.Stage(t.Context(), Request{Base: base, Dir: dir, StateClock: tt.state, BaseClock: tt.base})
			must(t, err)
			want := manifest.HashBytes([]byte("data"))
			for _, m := range []struct {
				name string
				m    *manifest.Manifest
				want bool
			}{{"staged", res.Staged, tt.wantStaged}, {"base", res.Base, tt.wantBase}} {
				for _, e := range m.m.Entries {
					switch {
					case e.Kind != manifest.KindFile && e.Digest != "":
						t.Errorf("%s %s %q has a digest", m.name, e.Kind, e.Path)
					case e.Kind == manifest.KindFile && m.want && e.Digest != want:
						t.Errorf("%s file %q: digest %q, want %q", m.name, e.Path, e.Digest, want)
					case e.Kind == manifest.KindFile && !m.want && e.Digest != "":
						t.Errorf("%s file %q: digest %q where stat proves it", m.name, e.Path, e.Digest)
					}
				}
			}
		})
	}
}

func TestRemoveReadOnlyTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "staged")
	outside := filepath.Join(t.TempDir(), "outside")
	must(t, os.MkdirAll(filepath.Join(dir, "ro/none/deeper"), 0o755))
	must(t, os.MkdirAll(outside, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "ro/none/deeper/f"), []byte("x"), 0o444))
	must(t, os.Symlink(outside, filepath.Join(dir, "ro/link")))
	must(t, os.Chmod(filepath.Join(dir, "ro/none/deeper"), 0o500))
	must(t, os.Chmod(filepath.Join(dir, "ro/none"), 0))
	must(t, os.Chmod(filepath.Join(dir, "ro"), 0o555))
	must(t, os.Chmod(outside, 0o555))

	t.Run("unlock", func(t *testing.T) {
		must(t, unlock(t.Context(), dir))
		for _, p := range []string{"", "ro", "ro/none", "ro/none/deeper"} {
			fi, err := os.Lstat(filepath.Join(dir, p))
			must(t, err)
			if fi.Mode().Perm()&0o700 != 0o700 {
				t.Errorf("%q: mode %v, want u+rwx", p, fi.Mode())
			}
		}
		fi, err := os.Stat(outside)
		must(t, err)
		if fi.Mode().Perm() != 0o555 {
			t.Errorf("unlock followed a symlink: outside dir mode %v", fi.Mode())
		}
	})
	must(t, os.Chmod(filepath.Join(dir, "ro/none"), 0))
	must(t, os.Chmod(filepath.Join(dir, "ro"), 0o555))
	t.Run("remove", func(t *testing.T) {
		must(t, copyBackend{}.Remove(t.Context(), dir))
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("still there: %v", err)
		}
		if _, err := os.Stat(outside); err != nil {
			t.Fatalf("removed through a symlink: %v", err)
		}
	})
	t.Run("refuses root", func(t *testing.T) {
		for _, p := range []string{"/", "relative"} {
			if err := removeTree(t.Context(), p); err == nil {
				t.Errorf("removeTree(%q) accepted", p)
			}
		}
	})
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a/b c", "a/b c"},
		{"é/ü", "é/ü"},
		{"new\nline", `"new\nline"`},
		{"bad\xff", `"bad\xff"`},
	}
	for _, tt := range tests {
		if got := quote(tt.in); got != tt.want {
			t.Errorf("quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// BenchmarkCopy stages a tree of 2,000 small files in 40 directories.
func BenchmarkCopy(b *testing.B) {
	base := b.TempDir()
	for d := range 40 {
		sub := filepath.Join(base, fmt.Sprintf("dir%02d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 50 {
			data := bytes.Repeat([]byte{byte(f)}, 100+f*40)
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%02d.txt", f)), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	parent := b.TempDir()
	n := 0
	for b.Loop() {
		dir := filepath.Join(parent, fmt.Sprint(n))
		n++
		// The copies are kept until the end: on ext4 without a journal,
		// creating files right after deleting as many is slow, and would
		// measure that instead of staging.
		if _, err := (copyBackend{}).Stage(b.Context(), Request{Base: base, Dir: dir}); err != nil {
			b.Fatal(err)
		}
	}
}
