// Package stagetest holds the test trees of the staging tests and of the
// pool's refresh tests, which compare a staged or refreshed tree with its
// base: a base holding every kind of entry staging must handle, and the
// facts a test compares, measured with the standard library rather than
// the manifest package.
package stagetest

import (
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/manifest"
)

// SkipExcluded is the exclude selector of the test trees: node_modules/ and
// *.log files.
func SkipExcluded(rel string, isDir bool) bool {
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	return (isDir && name == "node_modules") || (!isDir && strings.HasSuffix(name, ".log"))
}

// BuildTree makes a base that holds every kind of entry staging must handle,
// with a distinct nanosecond mtime on every path, and returns it.
func BuildTree(t *testing.T) string {
	t.Helper()
	base := filepath.Join(t.TempDir(), "base")
	big := make([]byte, 100<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	type file struct {
		path string
		mode fs.FileMode
		data []byte
	}
	dirs := []struct {
		path string
		mode fs.FileMode
	}{
		{"", 0o750},
		{"a", 0o755}, {"a/b", 0o755}, {"a/b/c", 0o755}, {"a/b/c/d", 0o700},
		{"sgid", 0o775 | fs.ModeSetgid},
		{"sticky", 0o777 | fs.ModeSticky},
		{"emptydir", 0o755},
		{"a/empty", 0o700},
		{"ro", 0o755}, {"ro/sub", 0o755}, // made 0555 once filled
		{"with space", 0o755},
		{".git", 0o755}, {".git/objects", 0o755}, {".git/objects/ab", 0o755},
		{"a/sub/.git", 0o755},
		{"node_modules", 0o755}, {"node_modules/pkg", 0o755},
	}
	files := []file{
		{"empty", 0o644, nil},
		{"one", 0o644, []byte("x")},
		{"big.bin", 0o644, big},
		{"exec.sh", 0o755, []byte("#!/bin/sh\necho hi\n")},
		{"secret", 0o600, []byte("s3cret\n")},
		{"suid", 0o755 | fs.ModeSetuid, []byte("suid\n")},
		{"sgid/f", 0o664, []byte("in setgid dir\n")},
		{"sticky/f", 0o666, []byte("in sticky dir\n")},
		{"a/b/c/d/deep.txt", 0o644, []byte("deep\n")},
		{"ro/f1", 0o444, []byte("read-only dir file\n")},
		{"ro/sub/f2", 0o644, []byte("nested in read-only dir\n")},
		{"bad\xff\xfename", 0o644, []byte("not utf-8\n")},
		{"new\nline", 0o644, []byte("newline in name\n")},
		{"with space/file x", 0o644, []byte("spaces\n")},
		{".git/HEAD", 0o644, []byte("ref: refs/heads/main\n")},
		{".git/objects/ab/cdef", 0o444, []byte("object\n")},
		{"a/sub/.git/config", 0o644, []byte("[core]\n")},
		{"node_modules/pkg/index.js", 0o644, []byte("excluded\n")},
		{"debug.log", 0o644, []byte("excluded\n")},
		{"a/trace.log", 0o644, []byte("excluded\n")},
	}
	links := []struct{ path, target string }{
		{"rel-link", "a/b/c/d/deep.txt"},
		{"abs-link", filepath.Join(base, "one")},
		{"dangling", "nowhere/at/all"},
		{"dir-link", "a/b"},
		{"a/b/up-link", "../../one"},
	}
	for _, d := range dirs {
		p := filepath.Join(base, d.path)
		must(t, os.MkdirAll(p, 0o700))
		must(t, os.Chmod(p, d.mode))
	}
	for _, f := range files {
		p := filepath.Join(base, f.path)
		must(t, os.WriteFile(p, f.data, 0o600))
		must(t, os.Chmod(p, f.mode))
	}
	for _, l := range links {
		must(t, os.Symlink(l.target, filepath.Join(base, l.path)))
	}
	deep := filepath.Join(base, "deep"+strings.Repeat("/d", 60))
	must(t, os.MkdirAll(deep, 0o755))
	must(t, os.WriteFile(filepath.Join(deep, "bottom"), []byte("bottom\n"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(base, "pipe"), 0o644))
	l, err := net.Listen("unix", filepath.Join(base, "a/sock"))
	must(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	must(t, l.Close())
	must(t, os.Chmod(filepath.Join(base, "ro/sub"), 0o555))
	must(t, os.Chmod(filepath.Join(base, "ro"), 0o555))
	t.Cleanup(func() {
		// Without this, t.TempDir cannot remove the tree unless run as root.
		os.Chmod(filepath.Join(base, "ro"), 0o755)
		os.Chmod(filepath.Join(base, "ro/sub"), 0o755)
	})

	// Distinct mtimes with a nanosecond part, set after every entry
	// exists so that no later creation moves a directory's mtime.
	var paths []string
	must(t, filepath.WalkDir(base, func(p string, _ fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	}))
	for i, p := range paths {
		SetMtime(t, p, time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC).UnixNano()+int64(i)*1_000_003+123_457)
	}
	return base
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func SetMtime(t *testing.T, p string, ns int64) {
	t.Helper()
	ts := []unix.Timespec{unix.NsecToTimespec(ns), unix.NsecToTimespec(ns)}
	must(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW))
}

// Fact is what the test compares between base and staged, measured with
// the standard library rather than the manifest package.
type Fact struct {
	Type  fs.FileMode
	Mode  fs.FileMode
	Mtime int64
	Ino   uint64
	Data  string // content or symlink target
}

// Facts measures every path under root ("" is root itself) without
// following symlinks, leaving out paths skip excludes.
func Facts(t *testing.T, root string, skip func(string, bool) bool) map[string]Fact {
	t.Helper()
	out := map[string]Fact{}
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			rel = ""
		} else if skip != nil && skip(filepath.ToSlash(rel), d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		f := Fact{Type: fi.Mode().Type(), Mode: fi.Mode() & manifest.ModeMask, Mtime: fi.ModTime().UnixNano(), Ino: uint64(st.Ino)}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f.Data = string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			f.Data, err = os.Readlink(p)
			if err != nil {
				return err
			}
		}
		out[filepath.ToSlash(rel)] = f
		return nil
	}))
	return out
}
