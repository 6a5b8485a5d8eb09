package changeset

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/testbin"
)

// oldTime is the mtime given to base files that are not meant to be racy:
// their staged copies then have mtime far older than ctime, so that stat
// alone can clear them.
var oldTime = time.Unix(1_600_000_000, 0)

// fixture is a base tree, its staged copy made with cp -a, and the
// manifests a transaction takes at open.
type fixture struct {
	base, staged string
	baseM, open  *manifest.Manifest
}

func (f *fixture) b(rel string) string { return filepath.Join(f.base, filepath.FromSlash(rel)) }
func (f *fixture) s(rel string) string { return filepath.Join(f.staged, filepath.FromSlash(rel)) }

type node struct {
	rel     string
	kind    manifest.Kind
	content string // file content or symlink target
	mode    fs.FileMode
	racy    bool // keep the fresh mtime instead of oldTime
}

func file(rel, content string, mode fs.FileMode) node {
	return node{rel: rel, kind: manifest.KindFile, content: content, mode: mode}
}
func dir(rel string, mode fs.FileMode) node {
	return node{rel: rel, kind: manifest.KindDir, mode: mode}
}
func link(rel, target string) node {
	return node{rel: rel, kind: manifest.KindSymlink, content: target}
}
func racy(n node) node     { n.racy = true; return n }
func fifo(rel string) node { return node{rel: rel, kind: manifest.KindOther, mode: 0o600} }

func build(t *testing.T, root string, nodes []node) {
	t.Helper()
	for _, n := range nodes {
		p := filepath.Join(root, filepath.FromSlash(n.rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch n.kind {
		case manifest.KindFile:
			if err := os.WriteFile(p, []byte(n.content), 0o600); err != nil {
				t.Fatal(err)
			}
		case manifest.KindDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case manifest.KindSymlink:
			if err := os.Symlink(n.content, p); err != nil {
				t.Fatal(err)
			}
		case manifest.KindOther:
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if n.kind != manifest.KindSymlink {
			if err := os.Chmod(p, n.mode); err != nil {
				t.Fatal(err)
			}
		}
		if n.kind == manifest.KindFile && !n.racy {
			if err := os.Chtimes(p, oldTime, oldTime); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func walk(t *testing.T, root string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Walk(context.Background(), root, manifest.WalkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

// newFixture builds the base, copies it with cp -a as the staged tree
// (dropping FIFOs, which staging never copies), measures both, and waits
// for the file system's clock to tick, so that any later write moves ctime
// visibly.
func newFixture(t *testing.T, nodes []node) *fixture {
	t.Helper()
	tmp := t.TempDir()
	f := &fixture{base: filepath.Join(tmp, "base"), staged: filepath.Join(tmp, "staged")}
	if err := os.Mkdir(f.base, 0o755); err != nil {
		t.Fatal(err)
	}
	build(t, f.base, nodes)
	f.baseM = walk(t, f.base)
	run(t, "cp", "-a", f.base, f.staged)
	for _, n := range nodes {
		if n.kind == manifest.KindOther {
			if err := os.Remove(f.s(n.rel)); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.open = walk(t, f.staged)
	// A racy file is one staging found too recent for its stat to prove
	// it unchanged later: it recorded its digest (stage.Result.Staged).
	for _, n := range nodes {
		if n.racy {
			e, _ := f.open.Lookup(n.rel)
			d, err := manifest.HashFile(f.s(n.rel))
			must(t, err)
			e.Digest = d
		}
	}
	testbin.NextTick(t, tmp)
	return f
}

func (f *fixture) diff(t *testing.T) *Set {
	t.Helper()
	set, err := Diff(context.Background(), Input{Base: f.baseM, StagedOpen: f.open, Staged: walk(t, f.staged), BaseDir: f.base, StagedDir: f.staged})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// describe renders a change set as "op path from->to" lines.
func describe(s *Set) []string {
	var out []string
	for _, c := range s.Changes {
		out = append(out, fmt.Sprintf("%s %s %s->%s", c.Op, c.Path, c.Base.Kind, c.Result.Kind))
	}
	return out
}

func TestDiffReportsEachKindOfChange(t *testing.T) {
	f := newFixture(t, []node{
		file("keep.txt", "keep", 0o644),
		file("atime.txt", "read only", 0o644),
		racy(file("fresh.txt", "fresh", 0o644)),
		file("mod.txt", "old content", 0o644),
		file("del.txt", "bye", 0o644),
		file("chmod.sh", "#!/bin/sh\n", 0o644),
		file("suid", "x", 0o755),
		file("t2dir", "file becomes dir", 0o644),
		file("d2file/x", "x", 0o644),
		link("link", "keep.txt"),
		file("f2link", "f", 0o644),
		file("olddir/a", "a", 0o644),
		file("olddir/b", "b", 0o644),
		dir("sub", 0o755),
	})
	must(t, os.WriteFile(f.s("mod.txt"), []byte("new, longer content"), 0o644))
	must(t, os.Remove(f.s("del.txt")))
	must(t, os.Chmod(f.s("chmod.sh"), 0o755))
	must(t, os.Chmod(f.s("suid"), 0o755|fs.ModeSetuid))
	must(t, os.Remove(f.s("t2dir")))
	build(t, f.staged, []node{file("t2dir/inner", "in", 0o644)})
	must(t, os.RemoveAll(f.s("d2file")))
	build(t, f.staged, []node{file("d2file", "now a file", 0o600)})
	must(t, os.Remove(f.s("link")))
	must(t, os.Symlink("mod.txt", f.s("link")))
	must(t, os.Remove(f.s("f2link")))
	must(t, os.Symlink("keep.txt", f.s("f2link")))
	must(t, os.RemoveAll(f.s("olddir")))
	must(t, os.Chmod(f.s("sub"), 0o700))
	build(t, f.staged, []node{file("new.txt", "new", 0o640), file("newdir/n", "n", 0o644), link("newlink", "new\xff")})
	run(t, "touch", "-a", f.s("atime.txt"))
	run(t, "touch", "-a", f.s("fresh.txt"))

	set := f.diff(t)
	want := []string{
		"modify chmod.sh file->file",
		"modify d2file dir->file",
		"delete d2file/x file->none",
		"delete del.txt file->none",
		"modify f2link file->symlink",
		"modify link symlink->symlink",
		"modify mod.txt file->file",
		"add new.txt none->file",
		"add newdir none->dir",
		"add newdir/n none->file",
		"add newlink none->symlink",
		"delete olddir dir->none",
		"delete olddir/a file->none",
		"delete olddir/b file->none",
		"modify sub dir->dir",
		"modify suid file->file",
		"modify t2dir file->dir",
		"add t2dir/inner none->file",
	}
	if got := describe(set); !slices.Equal(got, want) {
		t.Errorf("change set:\n got %q\nwant %q", got, want)
	}
	if a, m, d := set.Counts(); a != 4 || m != 8 || d != 4 {
		t.Errorf("Counts = %d %d %d, want 4 8 4 (newdir and olddir hold counted paths: git counts files and symlinks)", a, m, d)
	}
	byPath := map[string]Change{}
	for _, c := range set.Changes {
		byPath[c.Path] = c
	}
	if c := byPath["link"]; c.Base.Target != "keep.txt" || c.Result.Target != "mod.txt" {
		t.Errorf("link retarget recorded as %q -> %q", c.Base.Target, c.Result.Target)
	}
	if c := byPath["newlink"]; c.Result.Target != "new\xff" {
		t.Errorf("newlink target %q", c.Result.Target)
	}
	if c := byPath["chmod.sh"]; c.Base.Mode != 0o644 || c.Result.Mode != 0o755 {
		t.Errorf("chmod recorded as %v -> %v", c.Base.Mode, c.Result.Mode)
	}
	if c := byPath["suid"]; c.Result.Mode != 0o755|fs.ModeSetuid {
		t.Errorf("setuid recorded as %v", c.Result.Mode)
	}
	if c := byPath["sub"]; c.Result.Mode != 0o700 {
		t.Errorf("dir chmod recorded as %v", c.Result.Mode)
	}
	if set.GitMeta != 0 || len(set.Unsupported) != 0 {
		t.Errorf("GitMeta %d Unsupported %q, want none", set.GitMeta, set.Unsupported)
	}
	if set.Empty() {
		t.Error("Empty() on a non-empty set")
	}
}

func TestDiffNoChanges(t *testing.T) {
	f := newFixture(t, []node{file("a", "a", 0o644), racy(file("b", "b", 0o600)), link("l", "a"), dir("d", 0o750), fifo("p")})
	set := f.diff(t)
	if !set.Empty() || set.GitMeta != 0 {
		t.Fatalf("untouched staged tree gave %q (git %d, unsupported %q)", describe(set), set.GitMeta, set.Unsupported)
	}
	if got := set.Digest(); got != (&Set{}).Digest() {
		t.Errorf("empty set digest %s differs from the zero set's", got)
	}
}

// TestDiffSeesRewriteWithRestoredMtime rewrites a file in place with the
// same size and puts its old mtime back, as cp -p or tar x would: only
// ctime moved, and that must be enough.
func TestDiffSeesRewriteWithRestoredMtime(t *testing.T) {
	f := newFixture(t, []node{file("f", "aaaa", 0o644)})
	must(t, os.WriteFile(f.s("f"), []byte("bbbb"), 0o644))
	run(t, "touch", "-d", fmt.Sprintf("@%d", oldTime.Unix()), f.s("f"))

	now := walk(t, f.staged)
	o, _ := f.open.Lookup("f")
	n, _ := now.Lookup("f")
	if o.MtimeNs != n.MtimeNs || o.Size != n.Size || o.Ino != n.Ino {
		t.Fatalf("precondition: mtime, size and inode must be as at open: %+v vs %+v", *o, *n)
	}
	if o.CtimeNs == n.CtimeNs {
		t.Fatalf("precondition: ctime did not move (%d)", o.CtimeNs)
	}
	set := f.diff(t)
	if got := describe(set); !slices.Equal(got, []string{"modify f file->file"}) {
		t.Fatalf("change set %q, want the rewrite of f", got)
	}
}

// TestDiffRacyFile covers a file that staging found too recent for its
// stat to prove it unchanged later (it recorded the file's digest): a
// write in the same timestamp step as the staging would leave every stat
// fact equal, so the diff must compare its bytes, while a file staging
// found old enough is trusted by stat. The staged manifest at open is
// taken after the writes to make that step collision deterministic.
func TestDiffRacyFile(t *testing.T) {
	f := newFixture(t, []node{racy(file("r", "1234", 0o644)), file("n", "1234", 0o644)})
	digests := map[string]string{}
	for _, p := range []string{"r", "n"} {
		e, _ := f.open.Lookup(p)
		digests[p] = e.Digest
		must(t, os.WriteFile(f.s(p), []byte("5678"), 0o644))
		must(t, os.Chtimes(f.s(p), time.Unix(0, e.MtimeNs), time.Unix(0, e.MtimeNs)))
	}
	if digests["r"] == "" || digests["n"] != "" {
		t.Fatalf("precondition: only r has a digest at open: %q", digests)
	}
	// As if the writes were inside the staging's step: the open
	// manifest's stat facts are those of now, its digests those of open.
	f.open = walk(t, f.staged)
	for p, d := range digests {
		e, _ := f.open.Lookup(p)
		e.Digest = d
	}
	set := f.diff(t)
	if got := describe(set); !slices.Equal(got, []string{"modify r file->file"}) {
		t.Fatalf("change set %q, want r (racy, compared by content) and not n (stat-clean, trusted without reading)", got)
	}
}

// TestDiffRacyFileDigestAtOpen: Diff compares against the digest open
// recorded when stat cannot tell: a same-step rewrite is seen, an
// untouched file whose base copy changed since open is not the command's
// change, and each file Diff hashed carries the digest it read.
func TestDiffRacyFileDigestAtOpen(t *testing.T) {
	f := newFixture(t, []node{racy(file("r", "1234", 0o644)), racy(file("u", "same", 0o644))})
	digests := map[string]string{}
	for _, p := range []string{"r", "u"} {
		e, _ := f.open.Lookup(p)
		digests[p] = e.Digest
	}
	e, _ := f.open.Lookup("r")
	must(t, os.WriteFile(f.s("r"), []byte("5678"), 0o644))
	must(t, os.Chtimes(f.s("r"), time.Unix(0, e.MtimeNs), time.Unix(0, e.MtimeNs)))
	must(t, os.WriteFile(f.b("u"), []byte("SAME"), 0o644))
	// As if the rewrite had been inside the staging's step: the open
	// manifest's stat facts are those of now, its digests those of open.
	f.open = walk(t, f.staged)
	for p, d := range digests {
		e, _ := f.open.Lookup(p)
		e.Digest = d
	}
	now := walk(t, f.staged)
	set, err := Diff(context.Background(), Input{Base: f.baseM, StagedOpen: f.open, Staged: now, BaseDir: f.base, StagedDir: f.staged})
	must(t, err)
	if got := describe(set); !slices.Equal(got, []string{"modify r file->file"}) {
		t.Fatalf("change set %q, want only r", got)
	}
	for p, want := range map[string]string{"r": manifest.HashBytes([]byte("5678")), "u": digests["u"]} {
		if e, _ := now.Lookup(p); e.Digest != want {
			t.Errorf("%s: Diff left digest %q on the staged entry, want %q (the bytes it read)", p, e.Digest, want)
		}
	}
}

// TestDiffRacyFileUnchangedContent: a racy file whose stat moved but whose
// bytes did not is not a change.
func TestDiffRacyFileUnchangedContent(t *testing.T) {
	f := newFixture(t, []node{racy(file("r", "same", 0o644))})
	must(t, os.WriteFile(f.s("r"), []byte("same"), 0o644))
	if set := f.diff(t); len(set.Changes) != 0 {
		t.Fatalf("identical rewrite reported as %q", describe(set))
	}
}

// TestDiffBaseChangedSinceOpen: when the staged file's stat moved but its
// bytes equal the base's at open, the base copy can prove nothing once the
// base itself changed; the path counts as changed and the drift check
// decides.
func TestDiffBaseChangedSinceOpen(t *testing.T) {
	f := newFixture(t, []node{racy(file("r", "same", 0o644))})
	must(t, os.WriteFile(f.s("r"), []byte("same"), 0o644))
	must(t, os.WriteFile(f.b("r"), []byte("SAME"), 0o644))
	if got := describe(f.diff(t)); !slices.Equal(got, []string{"modify r file->file"}) {
		t.Fatalf("change set %q, want r", got)
	}
}

// TestDiffBaseChangedSinceOpenBytesAtOpenKept: once the base file moved,
// Input.AtOpen supplies its bytes at open, and the staged file is
// compared with those, not with the live base: equal bytes are no
// change, other bytes are one.
func TestDiffBaseChangedSinceOpenBytesAtOpenKept(t *testing.T) {
	for _, tc := range []struct {
		kept string
		want []string
	}{
		{"same", nil},
		{"diff", []string{"modify r file->file"}},
	} {
		t.Run(tc.kept, func(t *testing.T) {
			f := newFixture(t, []node{file("r", "same", 0o644)})
			must(t, os.WriteFile(f.s("r"), []byte("same"), 0o644))
			must(t, os.WriteFile(f.b("r"), []byte("SAME"), 0o644))
			var asked []string
			in := Input{Base: f.baseM, StagedOpen: f.open, Staged: walk(t, f.staged), BaseDir: f.base, StagedDir: f.staged,
				AtOpen: func(b manifest.Entry) (io.ReadCloser, bool) {
					asked = append(asked, b.Path)
					return io.NopCloser(strings.NewReader(tc.kept)), true
				}}
			set, err := Diff(context.Background(), in)
			must(t, err)
			if got := describe(set); !slices.Equal(got, tc.want) {
				t.Errorf("change set %q, want %q", got, tc.want)
			}
			if !slices.Equal(asked, []string{"r"}) {
				t.Errorf("AtOpen asked for %q, want [r]", asked)
			}
		})
	}
}

func TestDiffGitMeta(t *testing.T) {
	f := newFixture(t, []node{
		file(".git/HEAD", "ref: refs/heads/main\n", 0o644),
		file(".git/index", "index v1", 0o644),
		file(".git/config", "[core]\n", 0o644),
		file("sub/.git", "gitdir: ../.git/modules/sub\n", 0o644),
		file("sub/code.go", "package sub\n", 0o644),
	})
	must(t, os.WriteFile(f.s(".git/index"), []byte("index v2, longer"), 0o644))
	must(t, os.Remove(f.s(".git/HEAD")))
	build(t, f.staged, []node{file(".git/objects/ab", "blob", 0o444)})
	must(t, os.WriteFile(f.s("sub/.git"), []byte("gitdir: elsewhere\n"), 0o644))
	must(t, os.WriteFile(f.s("sub/code.go"), []byte("package sub // edited\n"), 0o644))

	set := f.diff(t)
	if got := describe(set); !slices.Equal(got, []string{"modify sub/code.go file->file"}) {
		t.Errorf("change set %q, want only sub/code.go: git metadata is never applied", got)
	}
	// index, HEAD, objects, objects/ab and sub/.git; not config, and not
	// .git itself: a directory changes by its kind or mode, not by what
	// moves inside it (that is counted path by path).
	if set.GitMeta != 5 {
		t.Errorf("GitMeta = %d, want 5", set.GitMeta)
	}
}

// TestDiffGitMetaCountsOnlyChanged: SPEC.md says show reports how many
// git metadata paths the command changed. A .git file written just before
// open (git status rewrites the index) and left alone by the command is
// not one of them.
func TestDiffGitMetaCountsOnlyChanged(t *testing.T) {
	f := newFixture(t, []node{racy(file(".git/index", "index", 0o644)), file(".git/HEAD", "ref", 0o644)})
	set := f.diff(t)
	if set.GitMeta != 0 {
		t.Errorf("GitMeta = %d for a staged tree the command never touched, want 0", set.GitMeta)
	}
}

func TestDiffUnsupported(t *testing.T) {
	f := newFixture(t, []node{file("a", "a", 0o644)})
	must(t, syscall.Mkfifo(f.s("pipe"), 0o600))
	set := f.diff(t)
	if !slices.Equal(set.Unsupported, []manifest.Bytes{"pipe"}) || len(set.Changes) != 0 {
		t.Fatalf("Unsupported %q, changes %q; want the FIFO unsupported and no change", set.Unsupported, describe(set))
	}
	if set.Empty() {
		t.Error("a set holding only an unsupported entry reads as empty: a commit would report no_changes")
	}

	must(t, os.Mkdir(f.s("sub\xff"), 0o755))
	must(t, syscall.Mkfifo(f.s("sub\xff/pipe"), 0o600))
	set = f.diff(t)
	if !slices.Equal(set.Unsupported, []manifest.Bytes{"pipe", "sub\xff/pipe"}) {
		t.Errorf("Unsupported %q", set.Unsupported)
	}
	if got := describe(set); !slices.Equal(got, []string{"add sub\xff none->dir"}) {
		t.Errorf("changes %q, want only the new directory", got)
	}
}

func TestDiffBaseOther(t *testing.T) {
	t.Run("not staged is not deleted", func(t *testing.T) {
		f := newFixture(t, []node{fifo("pipe"), file("a", "a", 0o644)})
		if set := f.diff(t); !set.Empty() {
			t.Fatalf("a FIFO the staging skipped was reported: %q %q", describe(set), set.Unsupported)
		}
	})
	t.Run("replaced by a file is an add", func(t *testing.T) {
		f := newFixture(t, []node{fifo("pipe")})
		build(t, f.staged, []node{file("pipe", "now a file", 0o644)})
		if got := describe(f.diff(t)); !slices.Equal(got, []string{"add pipe none->file"}) {
			t.Fatalf("change set %q", got)
		}
	})
}

func TestDiffCancelled(t *testing.T) {
	f := newFixture(t, []node{file("a", "a", 0o644)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Diff(ctx, Input{Base: f.baseM, StagedOpen: f.open, Staged: f.open, BaseDir: f.base, StagedDir: f.staged}); err == nil {
		t.Fatal("Diff ignored a cancelled context")
	}
}

// TestCountsAreFilesAndSymlinks: one new workflow file is "1 added", as
// git says, not 3 for the directories that hold it; a directory counts
// only where it matters on its own.
func TestCountsAreFilesAndSymlinks(t *testing.T) {
	f := newFixture(t, []node{
		file("README", "r", 0o644),
		file("old/deep/x", "x", 0o644),
		dir("gone", 0o755),
		dir("chmod", 0o755),
	})
	build(t, f.staged, []node{file(".github/workflows/ci.yml", "on: push\n", 0o644), dir("empty", 0o755), link("l", "README")})
	must(t, os.RemoveAll(f.s("old")))
	must(t, os.Remove(f.s("gone")))
	must(t, os.Chmod(f.s("chmod"), 0o700))
	set := f.diff(t)
	// Added: ci.yml, the empty directory, the symlink; deleted: x and the
	// empty directory gone; modified: chmod's mode.
	if a, m, d := set.Counts(); a != 3 || m != 1 || d != 2 {
		t.Errorf("Counts = %d added, %d modified, %d deleted; want 3, 1, 2\n%q", a, m, d, describe(set))
	}
}

// TestChangeJSONIsMarshal: a change encodes as encoding/json encodes its
// on-disk form, and decodes back.
func TestChangeJSONIsMarshal(t *testing.T) {
	for _, c := range []Change{
		{Path: "a", Op: Add, Result: manifest.Entry{Path: "a", Kind: manifest.KindFile, Mode: 0o644, Size: 3, MtimeNs: 1, CtimeNs: 2, Ino: 3, Dev: 4, Digest: "sha256:00"}},
		{Path: "d/<&>\"\\\xff", Op: Modify, Base: manifest.Entry{Path: "x", Kind: manifest.KindSymlink, Target: "t\xfe"}, Result: manifest.Entry{Kind: manifest.KindDir, Mode: 0o755}},
		{Path: "日本\u2028", Op: Delete, Base: manifest.Entry{Kind: manifest.KindFile}},
		{Path: "", Op: Op(9)},
	} {
		want, err := json.Marshal(changeJSON{manifest.Bytes(c.Path), c.Op, c.Base, c.Result})
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(c)
		if err != nil || string(got) != string(want) {
			t.Fatalf("change %+v\n got %s (%v)\nwant %s", c, got, err, want)
		}
	}
}
