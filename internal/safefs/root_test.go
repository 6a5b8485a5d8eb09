//go:build linux || darwin

package safefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newRoot opens a fresh directory as a Root and returns both.
func newRoot(t *testing.T) (*Root, string) {
	t.Helper()
	base := t.TempDir()
	r, err := OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, base
}

// newRootWithOutside makes parent/base (the root) and parent/outside side
// by side, so that a relative symlink can point from one to the other.
func newRootWithOutside(t *testing.T) (r *Root, base, outside string) {
	t.Helper()
	parent := t.TempDir()
	base = filepath.Join(parent, "base")
	outside = filepath.Join(parent, "outside")
	for _, d := range []string{base, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r, err := OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, base, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	must(t, os.WriteFile(path, []byte(data), 0o644))
}

// wantPathErr checks that err matches target and is an *fs.PathError
// naming op and the root path joined with rel.
func wantPathErr(t *testing.T, err, target error, r *Root, op, rel string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s %q: got %v, want %v", op, rel, err, target)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("%s %q: %T is not an *fs.PathError: %v", op, rel, err, err)
	}
	if pe.Op != op || pe.Path != r.full(rel) {
		t.Fatalf("%s %q: PathError{Op: %q, Path: %q}, want {%q, %q}", op, rel, pe.Op, pe.Path, op, r.full(rel))
	}
}

// snapshot records every path under dir with its type, mode, size, mtime,
// link target and content, to prove that nothing there changed.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		s := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			s += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += " " + string(b)
		}
		m[p] = s
		return nil
	})
	must(t, err)
	return m
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, s := range after {
		if before[p] != s {
			t.Errorf("%s changed: %s is %q, was %q", what, p, s, before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s changed: %s is gone", what, p)
		}
	}
}

var weirdNames = []string{
	"plain",
	"with space",
	"new\nline",
	"\xff\xfe-not-utf8",
	strings.Repeat("n", 255),
	"ünïcödé",
	"-dash",
	"*star?[x]",
	`back\slash`,
	".hidden",
	"..dots",
	"...",
}

func TestOperations(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		for i, name := range weirdNames {
			t.Run(fmt.Sprint(i), func(t *testing.T) { testOperations(t, name) })
		}
	})
}

func testOperations(t *testing.T, name string) {
	r, base := newRoot(t)
	dir := name
	must(t, r.Mkdir(dir, 0o755))
	if fi, err := os.Lstat(filepath.Join(base, dir)); err != nil || !fi.IsDir() {
		t.Fatalf("mkdir %q: %v, %v", dir, fi, err)
	}

	f, tmp, err := r.CreateTemp(dir, ".tmp-*.x")
	must(t, err)
	if !strings.HasPrefix(tmp, dir+"/.tmp-") || !strings.HasSuffix(tmp, ".x") {
		t.Errorf("CreateTemp name %q does not follow the pattern", tmp)
	}
	if f.Name() != filepath.Join(base, tmp) {
		t.Errorf("temp file is named %q, want %q", f.Name(), filepath.Join(base, tmp))
	}
	_, err = f.WriteString("hello")
	must(t, err)
	must(t, f.Close())
	if info, err := r.Lstat(tmp); err != nil || info.Mode != 0o600 {
		t.Errorf("temp file mode = %v, %v; want -rw-------", info.Mode, err)
	}

	file := dir + "/" + name
	must(t, r.Rename(tmp, file))
	if b, err := os.ReadFile(filepath.Join(base, file)); err != nil || string(b) != "hello" {
		t.Fatalf("after rename: %q, %v", b, err)
	}

	info, err := r.Lstat(file)
	must(t, err)
	fi, err := os.Lstat(filepath.Join(base, file))
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	if info.Mode != fi.Mode() || info.Size != 5 || info.MtimeNs != fi.ModTime().UnixNano() ||
		info.Ino != uint64(st.Ino) || info.Dev != uint64(st.Dev) || info.Nlink != 1 || info.CtimeNs == 0 {
		t.Errorf("Lstat = %+v, os.Lstat = %v %d %v ino %d", info, fi.Mode(), fi.Size(), fi.ModTime(), st.Ino)
	}

	rf, err := r.Open(file)
	must(t, err)
	b, err := io.ReadAll(rf)
	must(t, err)
	must(t, rf.Close())
	if string(b) != "hello" {
		t.Errorf("Open read %q", b)
	}
	df, err := r.Open(dir)
	must(t, err)
	names, err := df.Readdirnames(-1)
	must(t, err)
	must(t, df.Close())
	if !slices.Equal(names, []string{name}) {
		t.Errorf("Open(dir) lists %q, want %q", names, name)
	}

	must(t, r.Chmod(file, 0o750|fs.ModeSetuid))
	if fi, _ := os.Lstat(filepath.Join(base, file)); fi.Mode() != 0o750|fs.ModeSetuid {
		t.Errorf("after chmod: mode %v", fi.Mode())
	}
	must(t, r.Chmod(dir, 0o700|fs.ModeSetgid|fs.ModeSticky))
	if fi, _ := os.Lstat(filepath.Join(base, dir)); fi.Mode() != fs.ModeDir|0o700|fs.ModeSetgid|fs.ModeSticky {
		t.Errorf("after chmod dir: mode %v", fi.Mode())
	}

	const mtime = 1_600_000_000_123_456_789
	must(t, r.Chtimes(file, mtime))
	if fi, _ := os.Lstat(filepath.Join(base, file)); fi.ModTime().UnixNano() != mtime {
		t.Errorf("after chtimes: mtime %d, want %d", fi.ModTime().UnixNano(), int64(mtime))
	}

	links := dir + "/links"
	must(t, r.Mkdir(links, 0o755))
	link := links + "/" + name
	target := "../" + name
	must(t, r.Symlink(target, link))
	if got, err := r.Readlink(link); err != nil || got != target {
		t.Errorf("Readlink = %q, %v; want %q", got, err, target)
	}
	if got, _ := os.Readlink(filepath.Join(base, link)); got != target {
		t.Errorf("os.Readlink = %q, want %q", got, target)
	}
	if info, err := r.Lstat(link); err != nil || info.Mode.Type() != fs.ModeSymlink {
		t.Errorf("Lstat(link) = %v, %v", info.Mode, err)
	}
	wantPathErr(t, r.Symlink(target, link), fs.ErrExist, r, "symlink", link)
	wantPathErr(t, r.Mkdir(dir, 0o755), fs.ErrExist, r, "mkdir", dir)

	must(t, r.SyncFile(file))
	must(t, r.SyncDir(dir))
	must(t, r.SyncDir(""))

	wantPathErr(t, r.RemoveDir(dir), syscall.ENOTEMPTY, r, "removedir", dir)
	must(t, r.Remove(link))
	must(t, r.Remove(file))
	must(t, r.RemoveDir(links))
	must(t, r.RemoveDir(dir))
	if _, err := os.Lstat(filepath.Join(base, dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after RemoveDir: %v", err)
	}
	_, err = r.Lstat(file)
	wantPathErr(t, err, fs.ErrNotExist, r, "lstat", file)
}

func TestRenameReplaces(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base, outside := newRootWithOutside(t)
		writeFile(t, filepath.Join(base, "old"), "old")
		writeFile(t, filepath.Join(outside, "victim"), "victim")
		must(t, os.Symlink(filepath.Join(outside, "victim"), filepath.Join(base, "link")))
		for _, dst := range []string{"old", "link"} {
			f, tmp, err := r.CreateTemp("", "t*")
			must(t, err)
			_, err = f.WriteString("new " + dst)
			must(t, err)
			must(t, f.Close())
			must(t, r.Rename(tmp, dst))
			fi, err := os.Lstat(filepath.Join(base, dst))
			must(t, err)
			b, _ := os.ReadFile(filepath.Join(base, dst))
			if !fi.Mode().IsRegular() || string(b) != "new "+dst {
				t.Errorf("%s after rename: %v %q", dst, fi.Mode(), b)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "victim" {
			t.Errorf("renaming over a symlink wrote its target: %q", b)
		}
	})
}

func TestRootItself(t *testing.T) {
	r, base := newRoot(t)
	writeFile(t, filepath.Join(base, "f"), "x")
	info, err := r.Lstat("")
	must(t, err)
	if !info.Mode.IsDir() {
		t.Errorf("Lstat(\"\") mode %v", info.Mode)
	}
	d, err := r.Open("")
	must(t, err)
	names, err := d.Readdirnames(-1)
	must(t, err)
	d.Close()
	if !slices.Equal(names, []string{"f"}) {
		t.Errorf("Open(\"\") lists %q", names)
	}
	if r.Path() != base {
		t.Errorf("Path() = %q, want %q", r.Path(), base)
	}
}

// op is one Root operation applied to a path, for tables that try every
// operation against the same trap.
type op struct {
	name string // the Op its PathError carries
	do   func(r *Root, rel string) error
}

// path is the path o's PathError names for rel: CreateTemp's includes the
// pattern.
func (o op) path(rel string) string {
	if o.name == "createtemp" {
		return joinRel(rel, "t*")
	}
	return rel
}

var writeOps = []op{
	{"mkdir", func(r *Root, rel string) error { return r.Mkdir(rel, 0o755) }},
	{"createtemp", func(r *Root, rel string) error {
		f, _, err := r.CreateTemp(rel, "t*")
		if err == nil {
			f.Close()
		}
		return err
	}},
	{"rename", func(r *Root, rel string) error { return r.Rename("local", rel) }},
	{"rename", func(r *Root, rel string) error { return r.Rename(rel, "stolen") }},
	{"symlink", func(r *Root, rel string) error { return r.Symlink("target", rel) }},
	{"remove", func(r *Root, rel string) error { return r.Remove(rel) }},
	{"removedir", func(r *Root, rel string) error { return r.RemoveDir(rel) }},
	{"chmod", func(r *Root, rel string) error { return r.Chmod(rel, 0o777) }},
	{"chtimes", func(r *Root, rel string) error { return r.Chtimes(rel, 0) }},
	{"fsync", func(r *Root, rel string) error { return r.SyncDir(rel) }},
	{"fsync", func(r *Root, rel string) error { return r.SyncFile(rel) }},
	{"lstat", func(r *Root, rel string) error { _, err := r.Lstat(rel); return err }},
	{"readlink", func(r *Root, rel string) error { _, err := r.Readlink(rel); return err }},
	{"open", func(r *Root, rel string) error {
		f, err := r.Open(rel)
		if err == nil {
			f.Close()
		}
		return err
	}},
}

func TestRejectsEscape(t *testing.T) {
	bad := []string{"..", "/etc/x", "a/../../x", "a//b", "./a", "a/.", "a/", "/", "a\x00b", "../outside/x"}
	r, base, outside := newRootWithOutside(t)
	writeFile(t, filepath.Join(base, "local"), "local")
	before := snapshot(t, filepath.Dir(base))
	for _, o := range writeOps {
		for _, rel := range bad {
			wantPathErr(t, o.do(r, rel), ErrEscape, r, o.name, o.path(rel))
		}
	}
	for _, rel := range bad {
		// Rename checks both of its names.
		wantPathErr(t, r.Rename("local", rel), ErrEscape, r, "rename", rel)
	}
	_, _, err := r.CreateTemp("", "a/b*")
	wantPathErr(t, err, ErrEscape, r, "createtemp", "a/b*")
	sameSnapshot(t, "the tree", before, snapshot(t, filepath.Dir(base)))
	if _, err := os.Lstat(filepath.Join(outside, "x")); err == nil {
		t.Error("outside/x was created")
	}
}

// TestRejectsEmptyName checks that "" is refused where a name is needed,
// instead of reaching the kernel as the parent itself. (Lstat, Open,
// SyncDir and CreateTemp take "" as the root.)
func TestRejectsEmptyName(t *testing.T) {
	r, _ := newRoot(t)
	for _, o := range []op{writeOps[0], writeOps[4], writeOps[5], writeOps[6], writeOps[7], writeOps[8], writeOps[10], writeOps[12]} {
		wantPathErr(t, o.do(r, ""), ErrEscape, r, o.name, o.path(""))
	}
}

// trapTree fills a directory with what the symlink tests aim at.
func trapTree(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "victim"), "victim")
	must(t, os.Mkdir(filepath.Join(dir, "emptydir"), 0o755))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	writeFile(t, filepath.Join(dir, "sub", "victim"), "deep victim")
	must(t, os.Symlink("victim", filepath.Join(dir, "lnk")))
}

// throughSymlink tries every operation on paths below link and checks that
// each one fails with ErrSymlink and that nothing under watched changed.
func throughSymlink(t *testing.T, r *Root, base, link, watched string) {
	t.Helper()
	writeFile(t, filepath.Join(base, "local"), "local")
	before := snapshot(t, watched)
	for _, o := range writeOps {
		for _, rel := range []string{link, link + "/victim", link + "/new", link + "/emptydir", link + "/sub", link + "/sub/victim", link + "/lnk"} {
			if rel == link && o.name != "fsync" && o.name != "createtemp" {
				continue // the link itself is the final component: TestFinalSymlink
			}
			err := o.do(r, rel)
			if !errors.Is(err, ErrSymlink) {
				t.Errorf("%s %q: got %v, want ErrSymlink", o.name, rel, err)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Op != o.name {
				t.Errorf("%s %q: error %#v is not a PathError for %s", o.name, rel, err, o.name)
			}
		}
	}
	sameSnapshot(t, watched, before, snapshot(t, watched))
	if _, err := os.Lstat(filepath.Join(base, "local")); err != nil {
		t.Errorf("local file moved: %v", err)
	}
}

func TestIntermediateSymlinkOutside(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base, outside := newRootWithOutside(t)
		trapTree(t, outside)
		must(t, os.Symlink(outside, filepath.Join(base, "abs")))
		must(t, os.Symlink("../outside", filepath.Join(base, "rel")))
		must(t, os.MkdirAll(filepath.Join(base, "a", "b"), 0o755))
		must(t, os.Symlink("../../../outside", filepath.Join(base, "a", "b", "deep")))
		for _, link := range []string{"abs", "rel", "a/b/deep"} {
			t.Run(strings.ReplaceAll(link, "/", "|"), func(t *testing.T) {
				throughSymlink(t, r, base, link, outside)
			})
		}
		err := r.Mkdir("a/b/deep/x", 0o755)
		if !strings.Contains(err.Error(), `"a/b/deep"`) {
			t.Errorf("error does not name the symlink: %v", err)
		}
	})
}

// TestSymlinkInsideRoot is the case os.Root allows: a symlink that stays
// inside the root still redirects a write to another subtree.
func TestSymlinkInsideRoot(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base := newRoot(t)
		real := filepath.Join(base, "real")
		must(t, os.Mkdir(real, 0o755))
		trapTree(t, real)
		must(t, os.Symlink("real", filepath.Join(base, "dirlink")))
		must(t, os.Symlink(real, filepath.Join(base, "absdirlink")))
		for _, link := range []string{"dirlink", "absdirlink"} {
			t.Run(link, func(t *testing.T) {
				throughSymlink(t, r, base, link, real)
			})
		}
	})
}

func TestFinalSymlink(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base, outside := newRootWithOutside(t)
		trapTree(t, outside)
		must(t, os.Chmod(filepath.Join(outside, "victim"), 0o640))
		must(t, os.Symlink(filepath.Join(outside, "victim"), filepath.Join(base, "flink")))
		must(t, os.Symlink(outside, filepath.Join(base, "dlink")))
		before := snapshot(t, outside)

		wantPathErr(t, r.Chmod("flink", 0o777), ErrSymlink, r, "chmod", "flink")
		wantPathErr(t, r.Chmod("dlink", 0o777), ErrSymlink, r, "chmod", "dlink")

		const mtime = 1_500_000_000_000_000_007
		must(t, r.Chtimes("flink", mtime))
		if fi, _ := os.Lstat(filepath.Join(base, "flink")); fi.ModTime().UnixNano() != mtime {
			t.Errorf("Chtimes did not set the link's own mtime: %v", fi.ModTime())
		}

		_, err := r.Open("flink")
		wantPathErr(t, err, ErrSymlink, r, "open", "flink")
		_, err = r.Open("dlink")
		wantPathErr(t, err, ErrSymlink, r, "open", "dlink")
		wantPathErr(t, r.SyncFile("flink"), ErrSymlink, r, "fsync", "flink")
		wantPathErr(t, r.SyncDir("dlink"), ErrSymlink, r, "fsync", "dlink")
		_, _, err = r.CreateTemp("dlink", "t*")
		wantPathErr(t, err, ErrSymlink, r, "createtemp", "dlink/t*")
		wantPathErr(t, r.Mkdir("flink", 0o755), fs.ErrExist, r, "mkdir", "flink")
		wantPathErr(t, r.Symlink("x", "flink"), fs.ErrExist, r, "symlink", "flink")
		if err := r.RemoveDir("dlink"); err == nil {
			t.Error("RemoveDir of a symlink to a directory succeeded")
		}

		info, err := r.Lstat("flink")
		must(t, err)
		if info.Mode.Type() != fs.ModeSymlink {
			t.Errorf("Lstat(flink) mode %v", info.Mode)
		}
		must(t, r.Rename("flink", "moved"))
		if got, _ := os.Readlink(filepath.Join(base, "moved")); got != filepath.Join(outside, "victim") {
			t.Errorf("renamed link points to %q", got)
		}
		must(t, r.Remove("moved"))
		must(t, r.Remove("dlink"))
		if _, err := os.Lstat(filepath.Join(base, "moved")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("link still there after Remove: %v", err)
		}
		sameSnapshot(t, "outside", before, snapshot(t, outside))
	})
}

func TestNonDirectoryComponent(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base := newRoot(t)
		writeFile(t, filepath.Join(base, "file"), "x")
		wantPathErr(t, r.Mkdir("file/x", 0o755), syscall.ENOTDIR, r, "mkdir", "file/x")
		wantPathErr(t, r.Mkdir("missing/x", 0o755), fs.ErrNotExist, r, "mkdir", "missing/x")
		if err := r.Mkdir("file/x", 0o755); errors.Is(err, ErrSymlink) {
			t.Errorf("a regular file reported as a symlink: %v", err)
		}
	})
}

func TestOpenRefusesSpecialFiles(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base := newRoot(t)
		must(t, syscall.Mkfifo(filepath.Join(base, "fifo"), 0o644))
		done := make(chan error, 1)
		go func() {
			f, err := r.Open("fifo")
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file or directory") {
				t.Errorf("Open(fifo) = %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Open(fifo) blocked")
		}
	})
}

// TestLongPath resolves a path of more than PATH_MAX bytes, which openat2
// takes only in chunks and no absolute-path call could reach at all.
func TestLongPath(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		r, base := newRoot(t)
		var comps []string
		for i := range 25 {
			comps = append(comps, fmt.Sprintf("%03d%s", i, strings.Repeat("d", 197)))
			must(t, r.Mkdir(strings.Join(comps, "/"), 0o755))
		}
		deep := strings.Join(comps, "/")
		if len(deep) < 5000 {
			t.Fatalf("test path is only %d bytes", len(deep))
		}
		f, tmp, err := r.CreateTemp(deep, "t*")
		must(t, err)
		_, err = f.WriteString("deep")
		must(t, err)
		must(t, f.Close())
		file := deep + "/file"
		must(t, r.Rename(tmp, file))
		must(t, r.Chmod(file, 0o604))
		must(t, r.Chtimes(file, 1e18))
		must(t, r.SyncFile(file))
		must(t, r.SyncDir(deep))
		info, err := r.Lstat(file)
		must(t, err)
		if info.Size != 4 || info.Mode != 0o604 || info.MtimeNs != 1e18 {
			t.Errorf("Lstat(deep file) = %+v", info)
		}
		// Cross-check with os.Root, which walks one component at a time.
		osr, err := os.OpenRoot(base)
		must(t, err)
		defer osr.Close()
		b, err := osr.ReadFile(file)
		if err != nil || string(b) != "deep" {
			t.Errorf("os.Root reads %q, %v", b, err)
		}
		rf, err := r.Open(file)
		must(t, err)
		b, _ = io.ReadAll(rf)
		rf.Close()
		if string(b) != "deep" {
			t.Errorf("Open(deep file) read %q", b)
		}

		// A symlink past the first chunk is still refused.
		mid := strings.Join(comps[:22], "/")
		must(t, r.Symlink("..", mid+"/up"))
		wantPathErr(t, r.Mkdir(mid+"/up/x", 0o755), ErrSymlink, r, "mkdir", mid+"/up/x")
		must(t, r.Symlink("target", file+"-link"))
		if got, err := r.Readlink(file + "-link"); err != nil || got != "target" {
			t.Errorf("Readlink(deep) = %q, %v", got, err)
		}
		must(t, r.Remove(file+"-link"))
		must(t, r.Remove(file))
		must(t, r.RemoveDir(deep))
	})
}

func TestClosedRoot(t *testing.T) {
	r, _ := newRoot(t)
	must(t, r.Mkdir("d", 0o755))
	must(t, r.Close())
	_, err := r.Lstat("d")
	wantPathErr(t, err, os.ErrClosed, r, "lstat", "d")
	wantPathErr(t, r.Mkdir("e", 0o755), os.ErrClosed, r, "mkdir", "e")
	if err := r.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close = %v", err)
	}
}

func TestOpenRootNotDirectory(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	writeFile(t, file, "x")
	_, err := OpenRoot(file)
	var pe *fs.PathError
	if !errors.Is(err, syscall.ENOTDIR) || !errors.As(err, &pe) || pe.Path != file {
		t.Errorf("OpenRoot(file) = %v", err)
	}
	_, err = OpenRoot(filepath.Join(base, "missing"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenRoot(missing) = %v", err)
	}
}
