package torture

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestHostileNames: names with newlines, commas, percent signs, control
// bytes, invalid UTF-8, 255-byte components and a path of about 4,000
// bytes are committed exactly, and a refusal naming them keeps each on
// one line of the stderr block.
func TestHostileNames(t *testing.T) {
	w := newWorld(t)
	long := strings.Repeat("L", 255)
	deep := ""
	for len(deep)+len(w.base)+260 < 4000 {
		deep += fmt.Sprintf("%03d", len(deep)%1000) + strings.Repeat("p", 240) + "/"
	}
	names := []string{"new\nline", "tab\there", "comma,name", "per%41cent", "ctl\x01\x7f", "bad\xff\xfeutf8", "sp ace ", "-dash", long, "é unicode"}
	before := tree{".": {Kind: kDir, Mode: 0o755}, "dir": {Kind: kDir, Mode: 0o755}}
	for i, n := range names {
		before["dir/"+n] = node{Kind: kFile, Mode: 0o644, Data: fmt.Sprintf("old %d\n", i)}
	}
	before["gone\nsoon"] = node{Kind: kFile, Mode: 0o644, Data: "to delete"}
	materialize(t, w.base, before)
	after := before.clone()
	delete(after, "gone\nsoon")
	for i, n := range names {
		after["dir/"+n] = node{Kind: kFile, Mode: 0o600, Data: fmt.Sprintf("new %d\n", i)}
		after["new/"+n] = node{Kind: kSymlink, Data: "../dir/" + n}
	}
	after["new"] = node{Kind: kDir, Mode: 0o755}
	p := ""
	for _, c := range strings.Split(strings.TrimSuffix(deep, "/"), "/") {
		p = strings.TrimPrefix(p+"/"+c, "/")
		after[p] = node{Kind: kDir, Mode: 0o755}
	}
	after[p+"/"+"f\n\xff"] = node{Kind: kFile, Mode: 0o644, Data: "deep"}
	t.Logf("the longest path is %d bytes (%d with the base)", len(p)+4, len(w.base)+len(p)+5)
	staged := w.open("n1")
	materialize(t, staged, after)
	w.must("commit", "n1")
	if got := w.beforeOrAfter(before, after); got != "after" {
		t.Fatalf("the base is %s, want after", got)
	}

	// Drift on the odd names: the refusal names each, one value per line.
	staged = w.open("n2")
	for _, n := range names[:6] {
		check(t, os.WriteFile(filepath.Join(staged, "dir", n), []byte("mine\n"), 0o644))
		check(t, os.WriteFile(filepath.Join(w.base, "dir", n), []byte("theirs, meanwhile\n"), 0o644))
	}
	r := w.airlock("commit", "n2")
	if r.Code != 75 {
		t.Fatalf("want a refusal: %v", r)
	}
	got := map[string]bool{}
	for _, v := range strings.Split(r.Settle["refused_paths"], ",") {
		d, err := url.PathUnescape(v)
		if err != nil {
			t.Fatalf("refused_paths value %q does not decode: %v", v, err)
		}
		got[d] = true
	}
	for _, n := range names[:6] {
		if !got["dir/"+n] {
			t.Errorf("refused_paths %q does not name %q", r.Settle["refused_paths"], "dir/"+n)
		}
	}
}

// nobody is the unprivileged user the permission tests run airlock as.
const nobody = 65534

// asNobody prepares the world for airlock run as nobody: everything the
// world holds is owned by nobody, its directories are reachable, and
// airlock runs through setpriv. It skips when that cannot be done.
func asNobody(t *testing.T, w *world) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run airlock as another user (setpriv)")
	}
	testbin.Require(t, "setpriv", "util-linux: airlock runs through it as another user")
	for d := w.root; d != "/"; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		check(t, err)
		if fi.Mode().Perm()&0o005 != 0o005 {
			check(t, os.Chmod(d, fi.Mode().Perm()|0o005))
		}
	}
	check(t, os.Chmod(filepath.Dir(bin), 0o755))
	chownTree(t, w.root)
	w.wrap = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}
}

func chownTree(t *testing.T, root string) {
	t.Helper()
	check(t, filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	}))
}

// TestHostilePermissions runs airlock as an unprivileged user: a staged
// file its owner cannot read, and a read-only directory in the base. Each
// is committed exactly or refused clearly; the base is never partial.
func TestHostilePermissions(t *testing.T) {
	t.Run("unreadable-staged-file", func(t *testing.T) {
		w := newWorld(t)
		before := tree{".": {Kind: kDir, Mode: 0o755}, "a": {Kind: kFile, Mode: 0o644, Data: "a"}}
		materialize(t, w.base, before)
		asNobody(t, w)
		staged := w.open("p1")
		check(t, os.WriteFile(filepath.Join(staged, "secret"), []byte("no read\n"), 0o644))
		check(t, os.WriteFile(filepath.Join(staged, "a"), []byte("new a\n"), 0o644))
		chownTree(t, staged)
		check(t, os.Chmod(filepath.Join(staged, "secret"), 0o200))
		after := before.clone()
		after["secret"] = node{Kind: kFile, Mode: 0o200, Data: "no read\n"}
		after["a"] = node{Kind: kFile, Mode: 0o644, Data: "new a\n"}
		r := w.airlock("commit", "p1")
		switch {
		case r.Code == 0:
			if got := w.beforeOrAfter(before, after); got != "after" {
				t.Fatalf("committed, but the base is %s", got)
			}
		case (r.Code == 125 || r.Code == 75) && strings.Contains(r.Stderr, "secret"):
			if got := w.beforeOrAfter(before, after); got != "before" {
				t.Fatalf("refused, but the base is %s", got)
			}
			t.Logf("refused clearly: %s", lastLine(r.Stderr))
		default:
			t.Fatalf("want a commit or a refusal naming the file: %v", r)
		}
	})
	t.Run("read-only-directory-in-base", func(t *testing.T) {
		for _, user := range []string{"root", "nobody"} {
			t.Run(user, func(t *testing.T) {
				w := newWorld(t)
				before := tree{".": {Kind: kDir, Mode: 0o755}, "ro": {Kind: kDir, Mode: 0o555},
					"ro/a": {Kind: kFile, Mode: 0o644, Data: "a"}, "ro/b": {Kind: kFile, Mode: 0o444, Data: "b"},
					"ro/sub": {Kind: kDir, Mode: 0o555}, "ro/sub/c": {Kind: kFile, Mode: 0o644, Data: "c"}}
				materialize(t, w.base, before)
				if user == "nobody" {
					asNobody(t, w)
				}
				staged := w.open("p2")
				after := before.clone()
				after["ro/a"] = node{Kind: kFile, Mode: 0o644, Data: "new a"}
				delete(after, "ro/b")
				after["ro/sub/new"] = node{Kind: kFile, Mode: 0o644, Data: "new"}
				materialize(t, staged, after)
				if user == "nobody" {
					chownTree(t, staged)
				}
				r := w.airlock("commit", "p2")
				switch {
				case r.Code == 0:
					if got := w.beforeOrAfter(before, after); got != "after" {
						t.Fatalf("committed, but the base is %s", got)
					}
				case r.Code == 75 && r.Settle["refusal"] == "ApplyFailed":
					if got := w.beforeOrAfter(before, after); got != "before" {
						t.Fatalf("refused, but the base is %s", got)
					}
					t.Logf("refused clearly: %s", lastLine(r.Stderr))
				default:
					t.Fatalf("want a commit or an ApplyFailed refusal: %v", r)
				}
			})
		}
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestHostileSparseFile commits a change to a large sparse file (256 MiB by
// default, 2 GiB in soak mode): the content lands exactly, in bounded time,
// and sparse: the staged copy, the base's file after the commit and the
// whole state directory each take a few MiB of disk at most, not the
// file's size.
func TestHostileSparseFile(t *testing.T) {
	size := int64(256 << 20)
	if soak() > 1 {
		size = 2 << 30
	}
	w := newWorld(t)
	big := filepath.Join(w.base, "big.img")
	f, err := os.Create(big)
	check(t, err)
	check(t, f.Truncate(size))
	_, err = f.WriteAt([]byte("head"), 0)
	check(t, err)
	check(t, f.Close())
	before := snapshot(t, w.base)
	start := time.Now()
	staged := w.open("b1")
	t.Logf("open (staging %d MiB) took %v", size>>20, time.Since(start))
	wantSparse(t, "the staged copy", filepath.Join(staged, "big.img"))
	sf, err := os.OpenFile(filepath.Join(staged, "big.img"), os.O_WRONLY, 0)
	check(t, err)
	_, err = sf.WriteAt([]byte("middle"), size/2)
	check(t, err)
	_, err = sf.WriteAt([]byte("tail"), size-4)
	check(t, err)
	check(t, sf.Close())
	want := snapshot(t, staged)
	start = time.Now()
	w.must("commit", "b1")
	took := time.Since(start)
	if got := w.beforeOrAfter(before, want); got != "after" {
		t.Fatalf("the base is %s", got)
	}
	t.Logf("commit of a %d MiB sparse file took %v; it occupies %d KiB on disk after the commit, the state %d KiB", size>>20, took, allocated(t, big)>>10, allocated(t, w.state)>>10)
	if limit := time.Duration(size>>20) * 250 * time.Millisecond; took > limit {
		t.Errorf("the commit took %v, more than %v", took, limit)
	}
	wantSparse(t, "the base's file after the commit", big)
	// The frozen object, the original kept for undo and the pooled tree
	// all live here.
	wantSparse(t, "the state directory", w.state)
}

// sparseSlack is the disk a sparse file's copy (or all of airlock's state
// after committing one) may take: its data is a few bytes.
const sparseSlack = 4 << 20

// wantSparse fails unless p (a file, or a directory and all beneath it)
// takes at most sparseSlack of disk.
func wantSparse(t *testing.T, what, p string) {
	t.Helper()
	if n := allocated(t, p); n > sparseSlack {
		t.Errorf("%s %s takes %d MiB of disk: a sparse file's holes were filled", what, p, n>>20)
	}
}

// allocated is the disk that p, and everything beneath it, takes.
func allocated(t *testing.T, p string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return err
		}
		n += st.Blocks * 512
		return nil
	})
	check(t, err)
	return n
}

// TestHostileManyFiles commits a change set of many empty files in nested
// directories (20,000 by default, 100,000 in soak mode), and then a small
// change in the tree they make.
func TestHostileManyFiles(t *testing.T) {
	n := 20000
	if soak() > 1 {
		n = 100000
	}
	w := newWorld(t)
	if d := memDir(t); d != "" {
		// The count, not the disk, is under test: on this machine's ext4
		// the fsync of each new file costs about 2 ms, so 100,000 files
		// take minutes there. A tmpfs keeps the test about the count.
		w = newWorldIn(t, d)
	}
	before := tree{".": {Kind: kDir, Mode: 0o755}, "readme": {Kind: kFile, Mode: 0o644, Data: "r"}}
	materialize(t, w.base, before)
	staged := w.open("f1")
	for i := range n {
		d := filepath.Join(staged, fmt.Sprintf("d%03d", i%200), fmt.Sprintf("e%02d", i/200%50))
		if i < 200*50 {
			check(t, os.MkdirAll(d, 0o755))
		}
		f, err := os.OpenFile(filepath.Join(d, fmt.Sprintf("f%06d", i)), os.O_CREATE|os.O_WRONLY, 0o644)
		check(t, err)
		f.Close()
	}
	after := snapshot(t, staged)
	start := time.Now()
	r := w.must("commit", "f1")
	t.Logf("commit of %d added files took %v: %s added", n, time.Since(start), r.Settle["added"])
	if got := w.beforeOrAfter(before, after); got != "after" {
		t.Fatalf("the base is %s", got)
	}
	// A small change in the large tree costs little.
	staged = w.open("f2")
	check(t, os.WriteFile(filepath.Join(staged, "d007/e00/f000007"), []byte("x"), 0o644))
	start = time.Now()
	w.must("commit", "f2")
	t.Logf("then a one-file commit in the %d-file tree took %v", n, time.Since(start))
}
