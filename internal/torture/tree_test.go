package torture

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// kinds of a node.
const (
	kFile    = 'f'
	kDir     = 'd'
	kSymlink = 'l'
	kOther   = 'o'
)

// node is what a test compares of one path: its type, its mode (the bits a
// commit applies) and, for a file, its content (or a sha256 of it when
// large); for a symlink, its target.
type node struct {
	Kind byte
	Mode fs.FileMode
	Data string
}

func (n node) String() string {
	switch n.Kind {
	case kSymlink:
		return fmt.Sprintf("symlink -> %q", n.Data)
	case kDir:
		return fmt.Sprintf("dir %v", n.Mode)
	case kFile:
		d := n.Data
		if len(d) > 40 {
			d = d[:40] + "..."
		}
		return fmt.Sprintf("file %v %q", n.Mode, d)
	}
	return fmt.Sprintf("other %v", n.Mode)
}

// tree maps slash-separated paths relative to a root to their nodes; the
// root itself is "." (its mode counts too).
type tree map[string]node

const modeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// bigFile is the size above which a snapshot keeps a file's sha256 instead
// of its bytes.
const bigFile = 64 << 10

// snapshot measures dir without following any symlink.
func snapshot(t testing.TB, dir string) tree {
	t.Helper()
	return snapshotSkip(t, dir, nil)
}

// snapshotSkip is snapshot without the top-level names in skip.
func snapshotSkip(t testing.TB, dir string, skip map[string]bool) tree {
	t.Helper()
	out := tree{}
	var walk func(rel string)
	walk = func(rel string) {
		full := filepath.Join(dir, filepath.FromSlash(rel))
		fi, err := os.Lstat(full)
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		n := node{Mode: fi.Mode() & modeBits}
		switch {
		case fi.Mode().IsRegular():
			n.Kind = kFile
			n.Data = fileData(t, full, fi.Size())
		case fi.IsDir():
			n.Kind = kDir
		case fi.Mode()&fs.ModeSymlink != 0:
			n.Kind, n.Mode = kSymlink, 0
			if n.Data, err = os.Readlink(full); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
		default:
			n.Kind = kOther
		}
		out[rel] = n
		if n.Kind != kDir {
			return
		}
		f, err := os.Open(full)
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		for _, name := range names {
			if rel == "." && skip[name] {
				continue
			}
			if rel == "." {
				walk(name)
			} else {
				walk(rel + "/" + name)
			}
		}
	}
	walk(".")
	return out
}

func fileData(t testing.TB, full string, size int64) string {
	t.Helper()
	if size <= bigFile {
		b, err := os.ReadFile(full)
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		return string(b)
	}
	f, err := os.Open(full)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return fmt.Sprintf("sha256:%x size %d", h.Sum(nil), size)
}

// diff lists up to max differences between a and b, "" when equal.
func (a tree) diff(b tree, max int) string {
	var lines []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	n := 0
	for _, k := range sorted {
		x, inA := a[k]
		y, inB := b[k]
		switch {
		case inA && !inB:
			lines = append(lines, fmt.Sprintf("  %q: %v, then absent", k, x))
		case !inA && inB:
			lines = append(lines, fmt.Sprintf("  %q: absent, then %v", k, y))
		case x != y:
			lines = append(lines, fmt.Sprintf("  %q: %v, then %v", k, x, y))
		default:
			continue
		}
		n++
		if n == max {
			lines = append(lines, "  ...")
			break
		}
	}
	return strings.Join(lines, "\n")
}

func (a tree) equal(b tree) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// changed counts the paths whose nodes differ between a and b.
func (a tree) changed(b tree) int {
	n := 0
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			n++
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			n++
		}
	}
	return n
}

func (a tree) clone() tree {
	c := make(tree, len(a))
	for k, v := range a {
		c[k] = v
	}
	return c
}

func (a tree) sortedPaths() []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// materialize makes dir hold exactly want (the root's mode included),
// changing only what differs.
func materialize(t testing.TB, dir string, want tree) {
	t.Helper()
	have := snapshot(t, dir)
	full := func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }
	// Make every directory writable while it is worked on.
	for p, n := range have {
		if n.Kind == kDir && n.Mode&0o700 != 0o700 {
			check(t, os.Chmod(full(p), 0o700))
		}
	}
	hp := have.sortedPaths()
	for i := len(hp) - 1; i >= 0; i-- {
		p := hp[i]
		if p == "." {
			continue
		}
		w, ok := want[p]
		if !ok || w.Kind != have[p].Kind || (w.Kind == kSymlink && w.Data != have[p].Data) {
			check(t, os.RemoveAll(full(p)))
			delete(have, p)
		}
	}
	for _, p := range want.sortedPaths() {
		n := want[p]
		h, ok := have[p]
		switch n.Kind {
		case kDir:
			if !ok {
				check(t, os.Mkdir(full(p), 0o700))
			}
		case kFile:
			if !ok || h.Data != n.Data {
				check(t, os.WriteFile(full(p), []byte(n.Data), 0o600))
			}
			check(t, os.Chmod(full(p), n.Mode))
		case kSymlink:
			if !ok {
				check(t, os.Symlink(n.Data, full(p)))
			}
		default:
			t.Fatalf("materialize: cannot make %q of kind %c", p, n.Kind)
		}
	}
	wp := want.sortedPaths()
	for i := len(wp) - 1; i >= 0; i-- {
		if n := want[wp[i]]; n.Kind == kDir {
			check(t, os.Chmod(full(wp[i]), n.Mode))
		}
	}
}

func check(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// gen draws trees from a seeded source, so a failing seed replays.
type gen struct {
	r *rand.Rand
	n int
}

func newGen(seed uint64) *gen { return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g *gen) name(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

func (g *gen) content() string {
	var sizes = []int{0, 1, 17, 100, 512, 4096, 9000}
	size := sizes[g.r.IntN(len(sizes))]
	b := make([]byte, size)
	for i := range b {
		b[i] = "abcdefghij\n\x00\xff"[g.r.IntN(13)]
	}
	return string(b)
}

func (g *gen) fileMode() fs.FileMode {
	return []fs.FileMode{0o644, 0o600, 0o755, 0o640, 0o444}[g.r.IntN(5)]
}

func (g *gen) dirMode() fs.FileMode {
	return []fs.FileMode{0o755, 0o755, 0o700, 0o750, 0o555}[g.r.IntN(5)]
}

func (g *gen) target(t tree, at string) string {
	switch g.r.IntN(4) {
	case 0:
		return "/etc/passwd" // absolute, outside: applied as a symlink only
	case 1:
		return "missing-" + g.name("t") // dangling
	}
	// Another path of the tree, relative to the link's directory.
	ps := t.sortedPaths()
	p := ps[g.r.IntN(len(ps))]
	rel, err := filepath.Rel(path.Dir(at), p)
	if err != nil {
		return p
	}
	return rel
}

// base makes a tree of about files regular files, in nested directories,
// with symlinks among them.
func (g *gen) base(files int) tree {
	t := tree{".": {Kind: kDir, Mode: 0o755}}
	dirs := []string{"."}
	for len(t) < files {
		parent := dirs[g.r.IntN(len(dirs))]
		p := g.name("e")
		if parent != "." {
			p = parent + "/" + p
		}
		switch x := g.r.IntN(10); {
		case x < 2 && len(dirs) < files/6:
			t[p] = node{Kind: kDir, Mode: 0o755}
			dirs = append(dirs, p)
		case x < 3:
			t[p] = node{Kind: kSymlink, Data: g.target(t, p)}
		default:
			t[p] = node{Kind: kFile, Mode: g.fileMode(), Data: g.content()}
		}
	}
	return t
}

// mutate returns a copy of a with about changes paths changed: overwrites,
// deletes, adds, chmods, new symlink targets, every type change between
// file, directory and symlink, and new nested directories.
func (g *gen) mutate(a tree, changes int) tree {
	b := a.clone()
	for b.changed(a) < changes {
		ps := b.sortedPaths()
		p := ps[g.r.IntN(len(ps))]
		n := b[p]
		if p == "." {
			continue
		}
		switch x := g.r.IntN(16); {
		case x < 3 && n.Kind == kFile:
			n.Data = g.content()
			b[p] = n
		case x < 4 && b.small(p):
			b.remove(p)
		case x < 6 && n.Kind == kFile:
			n.Mode ^= 0o111
			b[p] = n
		case x < 7 && n.Kind == kSymlink:
			n.Data = g.target(b, p)
			b[p] = n
		case x < 8 && n.Kind == kFile: // file -> dir with children
			b[p] = node{Kind: kDir, Mode: g.dirMode()}
			for range 1 + g.r.IntN(3) {
				b[p+"/"+g.name("c")] = node{Kind: kFile, Mode: g.fileMode(), Data: g.content()}
			}
		case x < 9 && n.Kind == kDir && b.small(p): // dir -> file
			b.remove(p)
			b[p] = node{Kind: kFile, Mode: g.fileMode(), Data: g.content()}
		case x < 10 && n.Kind != kSymlink && b.small(p): // file or dir -> symlink
			b.remove(p)
			b[p] = node{Kind: kSymlink, Data: g.target(b, p)}
		case x < 11 && n.Kind == kSymlink: // symlink -> file or dir
			if g.r.IntN(2) == 0 {
				b[p] = node{Kind: kFile, Mode: g.fileMode(), Data: g.content()}
			} else {
				b[p] = node{Kind: kDir, Mode: 0o755}
				b[p+"/"+g.name("c")] = node{Kind: kFile, Mode: 0o644, Data: g.content()}
			}
		case x < 12 && n.Kind == kDir:
			n.Mode = g.dirMode()
			b[p] = n
		case x < 16 && n.Kind == kDir: // adds, sometimes nested
			q := p + "/" + g.name("n")
			for range g.r.IntN(3) {
				b[q] = node{Kind: kDir, Mode: 0o755}
				q += "/" + g.name("n")
			}
			b[q] = node{Kind: kFile, Mode: g.fileMode(), Data: g.content()}
		}
	}
	return b
}

// remove deletes p and everything beneath it.
func (a tree) remove(p string) {
	delete(a, p)
	prefix := p + "/"
	for k := range a {
		if strings.HasPrefix(k, prefix) {
			delete(a, k)
		}
	}
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// small reports whether p has at most a few entries beneath it, so that
// removing it does not shrink the tree much.
func (a tree) small(p string) bool {
	n := 0
	prefix := p + "/"
	for k := range a {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n <= 3
}

// withoutLinkedParents drops from b what airlock refuses today although it
// is a plain change: a directory with files replaced by a symlink (the
// deletions beneath it read as writes through the new symlink; see
// TestDirectoryBecomesSymlink). The crash rig turns A into B and B back
// into A, so both a symlink in a where b has a directory with children
// and the reverse are dropped.
func withoutLinkedParents(a, b tree) tree {
	b = b.clone()
	for _, p := range b.sortedPaths() {
		for q := path.Dir(p); q != "." && q != "/"; q = path.Dir(q) {
			if n, ok := a[q]; ok && n.Kind == kSymlink {
				b.remove(p)
				break
			}
		}
	}
	for p, n := range b {
		if n.Kind == kSymlink && a[p].Kind == kDir && hasChildren(a, p) {
			delete(b, p)
		}
	}
	return b
}

func hasChildren(a tree, p string) bool {
	prefix := p + "/"
	for k := range a {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
