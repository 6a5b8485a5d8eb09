package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/testbin"
)

const txID = "tx-test"

var oldTime = time.Unix(1_600_000_000, 0)

type node struct {
	rel     string
	kind    manifest.Kind
	content string // file content or symlink target
	mode    fs.FileMode
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

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func build(t *testing.T, root string, nodes []node) {
	t.Helper()
	for _, n := range nodes {
		p := filepath.Join(root, filepath.FromSlash(n.rel))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch n.kind {
		case manifest.KindFile:
			must(t, os.WriteFile(p, []byte(n.content), 0o600))
		case manifest.KindDir:
			must(t, os.MkdirAll(p, 0o755))
		case manifest.KindSymlink:
			must(t, os.Symlink(n.content, p))
		}
		if n.kind != manifest.KindSymlink {
			must(t, os.Chmod(p, n.mode))
		}
		if n.kind == manifest.KindFile {
			must(t, os.Chtimes(p, oldTime, oldTime))
		}
	}
}

func cpA(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", from, to, err, out)
	}
}

// snap is what "the same tree" means here: kind, mode, bytes, target, and
// a regular file's mtime (apply and restore both set it).
type snap struct {
	kind    manifest.Kind
	mode    fs.FileMode
	content string
	mtime   int64
}

// snapshot records every path under root, skipping nothing.
func snapshot(t *testing.T, root string) map[string]snap {
	t.Helper()
	out := map[string]snap{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		e, err := manifest.Lstat(p)
		if err != nil {
			return err
		}
		s := snap{kind: e.Kind, mode: e.Mode}
		switch e.Kind {
		case manifest.KindFile:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s.content, s.mtime = string(b), e.MtimeNs
		case manifest.KindSymlink:
			s.content, s.mode = e.Target, 0
		}
		out[filepath.ToSlash(rel)] = s
		return nil
	})
	must(t, err)
	return out
}

func sameTree(t *testing.T, what string, got, want map[string]snap) {
	t.Helper()
	var diffs []string
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("missing %q (%v)", p, w.kind))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%q: got %v %v %q mtime %d, want %v %v %q mtime %d", p, g.kind, g.mode, g.content, g.mtime, w.kind, w.mode, w.content, w.mtime))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected %q (%v %q)", p, g.kind, g.content))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%s:\n  %s", what, strings.Join(diffs, "\n  "))
	}
}

// plan is a change set frozen from a staged copy of a pristine base.
type plan struct {
	pristine string // the base as it was at open; never changed
	staged   string
	// objects is the store an apply reads, put back as frozen (from
	// frozen, where set) for each new base: an apply may move its
	// objects into the base.
	objects string
	frozen  string
	set     *changeset.Set
}

// mixedBase and mixedEdit make a change set with every kind of operation.
var mixedBase = []node{
	file("keep.txt", "keep", 0o644),
	file("mod.txt", "old", 0o644),
	file("chmod.sh", "#!/bin/sh\n", 0o644),
	file("suid", "s", 0o755),
	file("del.txt", "bye", 0o600),
	file("olddir/a", "a", 0o644),
	file("olddir/deep/b", "b", 0o644),
	file("t2dir", "file becomes dir", 0o644),
	file("d2file/x", "x", 0o644),
	link("link", "keep.txt"),
	file("f2link", "f", 0o644),
	link("l2file", "keep.txt"),
	dir("sub", 0o755),
	file("sub/f", "sub file", 0o644),
	file("bad\xffname", "raw", 0o644),
	file("keepdir/edit.txt", "edit me", 0o644),
	file("keepdir/same.txt", "same", 0o644),
}

func mixedEdit(t *testing.T, s string) {
	t.Helper()
	p := func(rel string) string { return filepath.Join(s, filepath.FromSlash(rel)) }
	must(t, os.WriteFile(p("mod.txt"), []byte("new, longer content"), 0o644))
	must(t, os.Chmod(p("chmod.sh"), 0o755))
	must(t, os.Chmod(p("suid"), 0o755|fs.ModeSetuid))
	must(t, os.Remove(p("del.txt")))
	must(t, os.RemoveAll(p("olddir")))
	must(t, os.Remove(p("t2dir")))
	build(t, s, []node{file("t2dir/inner", "in", 0o640)})
	must(t, os.RemoveAll(p("d2file")))
	build(t, s, []node{file("d2file", "now a file", 0o600)})
	must(t, os.Remove(p("link")))
	must(t, os.Symlink("mod.txt", p("link")))
	must(t, os.Remove(p("f2link")))
	must(t, os.Symlink("../outside", p("f2link")))
	must(t, os.Remove(p("l2file")))
	build(t, s, []node{file("l2file", "was a link", 0o644)})
	must(t, os.WriteFile(p("sub/f"), []byte("sub file, edited"), 0o644))
	must(t, os.Chmod(p("sub"), 0o700))
	must(t, os.WriteFile(p("bad\xffname"), []byte("raw, edited"), 0o644))
	must(t, os.WriteFile(p("keepdir/edit.txt"), []byte("edited"), 0o644))
	build(t, s, []node{file("new.txt", "new", 0o640), file("newdir/n", "n", 0o644), link("newdir/l", "n"), file("sub/new", "added in sub", 0o644)})
}

func newPlan(t *testing.T, base []node, edit func(*testing.T, string)) *plan {
	t.Helper()
	tmp := t.TempDir()
	p := &plan{pristine: filepath.Join(tmp, "pristine"), staged: filepath.Join(tmp, "staged"), objects: filepath.Join(tmp, "objects"), frozen: filepath.Join(tmp, "frozen")}
	must(t, os.Mkdir(p.pristine, 0o755))
	build(t, p.pristine, base)
	cpA(t, p.pristine, p.staged)
	baseM := walk(t, p.pristine)
	open := walk(t, p.staged)
	// The edit must move ctime visibly: the diff below decides by stat.
	testbin.NextTick(t, tmp)
	edit(t, p.staged)
	set, err := changeset.Diff(context.Background(), changeset.Input{Base: baseM, StagedOpen: open, Staged: walk(t, p.staged), BaseDir: p.pristine, StagedDir: p.staged})
	must(t, err)
	must(t, changeset.Freeze(context.Background(), set, p.staged, p.frozen))
	cpA(t, p.frozen, p.objects)
	if len(set.Changes) == 0 {
		t.Fatal("the edit changed nothing")
	}
	p.set = set
	return p
}

func walk(t *testing.T, root string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Walk(context.Background(), root, manifest.WalkOptions{})
	must(t, err)
	return m
}

// base is one base tree a plan is applied to, with its own journal dir.
type base struct {
	dir, jdir string
	root      *safefs.Root
}

// newBase copies the pristine tree as a fresh base and opens it, and puts
// the plan's objects back as they were frozen.
func (p *plan) newBase(t *testing.T) *base {
	t.Helper()
	if p.frozen != "" {
		must(t, os.RemoveAll(p.objects))
		cpA(t, p.frozen, p.objects)
	}
	tmp := t.TempDir()
	b := &base{dir: filepath.Join(tmp, "base"), jdir: filepath.Join(tmp, "state", "journal")}
	cpA(t, p.pristine, b.dir)
	must(t, os.Mkdir(filepath.Join(tmp, "state"), 0o700))
	r, err := safefs.OpenRoot(b.dir)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	b.root = r
	return b
}

// ops turns the change set into journal operations whose Before is what
// the base holds now, as the commit's drift check does.
func (p *plan) ops(t *testing.T, b *base) []Op {
	t.Helper()
	var ops []Op
	for _, c := range p.set.Changes {
		cur, err := measure(b.root, c.Path)
		must(t, err)
		ops = append(ops, Op{Path: c.Path, Before: cur, After: c.Result})
	}
	return ops
}

func (p *plan) prepare(t *testing.T, b *base) *Journal {
	t.Helper()
	j, err := Prepare(context.Background(), b.root, b.jdir, txID, p.ops(t, b))
	must(t, err)
	return j
}

func restore(t *testing.T, b *base, j *Journal) *RestoreResult {
	t.Helper()
	res, err := Restore(context.Background(), b.root, j, b.jdir)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if res.Digest != res.BeforeDigest || !strings.HasPrefix(res.Digest, manifest.DigestPrefix) {
		t.Fatalf("Restore digests %s, before %s", res.Digest, res.BeforeDigest)
	}
	return res
}

func TestApplyMixedPlan(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	before := snapshot(t, b.dir)
	j := p.prepare(t, b)
	sameTree(t, "base after Prepare", snapshot(t, b.dir), before)

	res, err := Apply(context.Background(), b.root, j, p.objects)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res.Kept) != 0 {
		t.Errorf("Kept %q, want none", res.Kept)
	}
	sameTree(t, "base after Apply vs the staged tree", snapshot(t, b.dir), snapshot(t, p.staged))

	rr := restore(t, b, j)
	sameTree(t, "base after Restore vs before", snapshot(t, b.dir), before)
	if len(rr.Displaced) != 0 {
		t.Errorf("Displaced %q after restoring a clean apply", rr.Displaced)
	}
	// Idempotent: nothing left to do, the same proof.
	rr2 := restore(t, b, j)
	if rr2.Digest != rr.Digest {
		t.Errorf("second Restore digest %s, first %s", rr2.Digest, rr.Digest)
	}
	sameTree(t, "base after a second Restore", snapshot(t, b.dir), before)
}

func TestJournalFileAndBackups(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	j := p.prepare(t, b)
	if !Exists(b.jdir) {
		t.Fatal("Exists is false after Prepare")
	}
	loaded, err := Load(b.jdir)
	must(t, err)
	if loaded.Digest != j.Digest || len(loaded.Ops) != len(j.Ops) || loaded.TxID != txID || string(loaded.Base) != b.dir {
		t.Fatalf("loaded journal %+v differs from the prepared one", loaded)
	}
	for i := range j.Ops {
		if loaded.Ops[i] != j.Ops[i] {
			t.Errorf("op %d: loaded %+v, prepared %+v", i, loaded.Ops[i], j.Ops[i])
		}
	}
	for _, op := range j.Ops {
		if op.Before.Kind != manifest.KindFile {
			if op.Backup != "" {
				t.Errorf("%s: backup %q for a %s", op.Path, op.Backup, op.Before.Kind)
			}
			continue
		}
		got, err := os.ReadFile(BackupPath(b.jdir, op))
		if err != nil {
			t.Errorf("%s: no backup: %v", op.Path, err)
			continue
		}
		orig, err := os.ReadFile(filepath.Join(p.pristine, filepath.FromSlash(op.Path)))
		must(t, err)
		if string(got) != string(orig) || op.Before.Digest != manifest.HashBytes(orig) {
			t.Errorf("%s: backup %q digest %s, want %q", op.Path, got, op.Before.Digest, orig)
		}
	}
	must(t, Retire(b.jdir))
	if Exists(b.jdir) {
		t.Error("Exists after Retire")
	}
	if _, err := os.Lstat(b.jdir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("journal dir still there after Retire: %v", err)
	}
}

// TestRestoreAfterPartialApply applies every prefix of the plan (as a
// process killed after N operations would leave the base) and restores
// from the full journal each time.
func TestRestoreAfterPartialApply(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	n := len(p.set.Changes)
	for k := 0; k < n; k++ {
		t.Run(fmt.Sprintf("%d_of_%d", k, n), func(t *testing.T) {
			b := p.newBase(t)
			before := snapshot(t, b.dir)
			j := p.prepare(t, b)
			prefix := *j
			prefix.Ops = j.Ops[:k]
			// An error is expected for some prefixes (a directory to
			// replace whose children are not removed yet): that too is a
			// partial apply.
			Apply(context.Background(), b.root, &prefix, p.objects)
			restore(t, b, j)
			sameTree(t, "base after Restore", snapshot(t, b.dir), before)
		})
	}
}

// TestRestoreAfterKilledApply runs Apply in a child process armed to
// SIGKILL itself after N operations (fault point "apply:N"), for every N,
// and restores from the journal the child left.
func TestRestoreAfterKilledApply(t *testing.T) {
	if !fault.Enabled {
		testbin.Missing(t, "the fault point apply:N is live only in a test binary built with -tags %s (go test -tags %[1]s ./...)", testbin.FaultsTag)
	}
	p := newPlan(t, mixedBase, mixedEdit)
	for n := 1; ; n++ {
		b := p.newBase(t)
		before := snapshot(t, b.dir)
		j := p.prepare(t, b)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperApply$")
		cmd.Env = append(os.Environ(), "AIRLOCK_JOURNAL_HELPER=1", "HELPER_BASE="+b.dir, "HELPER_JOURNAL="+b.jdir,
			"HELPER_OBJECTS="+p.objects, fmt.Sprintf("AIRLOCK_TEST_FAULT=apply:%d", n))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled()
		if !killed && err != nil {
			t.Fatalf("apply:%d: helper failed: %v\n%s", n, err, out)
		}
		if !killed {
			// The apply finished before reaching step n: every step
			// has been covered.
			if n < len(j.Ops) {
				t.Fatalf("the apply of %d operations finished after only %d steps", len(j.Ops), n-1)
			}
			break
		}
		loaded, err := Load(b.jdir)
		must(t, err)
		restore(t, b, loaded)
		sameTree(t, fmt.Sprintf("base after Restore of an apply killed at step %d", n), snapshot(t, b.dir), before)
		if t.Failed() {
			break
		}
	}
}

// TestHelperApply is the child of TestRestoreAfterKilledApply.
func TestHelperApply(t *testing.T) {
	if os.Getenv("AIRLOCK_JOURNAL_HELPER") != "1" {
		t.Skip("helper process only")
	}
	j, err := Load(os.Getenv("HELPER_JOURNAL"))
	must(t, err)
	root, err := safefs.OpenRoot(os.Getenv("HELPER_BASE"))
	must(t, err)
	if _, err := Apply(context.Background(), root, j, os.Getenv("HELPER_OBJECTS")); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreCancelledApply(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	before := snapshot(t, b.dir)
	j := p.prepare(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Apply(ctx, b.root, j, p.objects); err == nil {
		t.Fatal("Apply ignored a cancelled context")
	}
	restore(t, b, j)
	sameTree(t, "base after Restore", snapshot(t, b.dir), before)
}

func TestRestoreRemovesTemps(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	before := snapshot(t, b.dir)
	j := p.prepare(t, b)
	_, err := Apply(context.Background(), b.root, j, p.objects)
	must(t, err)
	// Leftovers of a process killed mid-write, in directories the
	// journal touches, and one of another transaction, which stays.
	temps := []string{TempPrefix(txID) + "0a1b2c", "sub/" + TempPrefix(txID) + "ffffff"}
	for _, tmp := range temps {
		must(t, os.WriteFile(filepath.Join(b.dir, filepath.FromSlash(tmp)), []byte("half"), 0o600))
	}
	must(t, os.Symlink("mod.txt", filepath.Join(b.dir, TempPrefix(txID)+"link")))
	other := filepath.Join(b.dir, TempPrefix("other-tx")+"123456")
	must(t, os.WriteFile(other, []byte("not ours"), 0o600))

	restore(t, b, j)
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("another transaction's temp file was removed: %v", err)
	}
	must(t, os.Remove(other))
	sameTree(t, "base after Restore", snapshot(t, b.dir), before)
}

func TestLoadRefusesAlteredJournal(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	j := p.prepare(t, b)
	good, err := os.ReadFile(Path(b.jdir))
	must(t, err)

	swapped := *j
	swapped.Ops = append([]Op(nil), j.Ops...)
	swapped.Ops[0], swapped.Ops[1] = swapped.Ops[1], swapped.Ops[0]
	swapped.Digest, err = swapped.digest()
	must(t, err)
	swappedJSON := mustJSON(t, &swapped)

	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"edited mode", []byte(strings.Replace(string(good), `"mode":420`, `"mode":511`, 1)), "digest"},
		{"edited path", []byte(strings.Replace(string(good), `"path":"mod.txt"`, `"path":"../mod.txt"`, 1)), "digest"},
		{"edited backup name", []byte(strings.Replace(string(good), `"backup":"0000`, `"backup":"9999`, 1)), "digest"},
		{"truncated", good[:len(good)/2], "corrupt journal"},
		{"empty", nil, "corrupt journal"},
		{"ops out of order, digest recomputed", swappedJSON, "out of order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.data) == string(good) {
				t.Fatal("the edit did not change the journal")
			}
			must(t, os.WriteFile(Path(b.jdir), tt.data, 0o600))
			loaded, err := Load(b.jdir)
			if err == nil {
				t.Fatalf("Load accepted it: %+v", loaded)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func mustJSON(t *testing.T, j *Journal) []byte {
	t.Helper()
	b, err := json.Marshal(j)
	must(t, err)
	return b
}

// TestRestoreRefusesAlteredBackup: a backup whose bytes no longer match
// the journal is never renamed into the base.
func TestRestoreRefusesAlteredBackup(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	j := p.prepare(t, b)
	_, err := Apply(context.Background(), b.root, j, p.objects)
	must(t, err)
	var op Op
	for _, o := range j.Ops {
		if o.Path == "mod.txt" {
			op = o
		}
	}
	if op.Backup == "" {
		t.Fatal("mod.txt has no backup")
	}
	must(t, os.WriteFile(BackupPath(b.jdir, op), []byte("TAMPERED"), 0o600))
	if _, err := Restore(context.Background(), b.root, j, b.jdir); err == nil {
		t.Fatal("Restore used an altered backup")
	}
	got, err := os.ReadFile(filepath.Join(b.dir, "mod.txt"))
	must(t, err)
	if string(got) != "new, longer content" {
		t.Fatalf("mod.txt now holds %q, want the applied content left in place", got)
	}
	ents, err := os.ReadDir(b.dir)
	must(t, err)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), TempPrefix(txID)) {
			t.Errorf("temporary %s left in the base", e.Name())
		}
	}
}

func TestPrepareDrift(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	tests := []struct {
		name, path string
		change     func(t *testing.T, dir string)
	}{
		{"file rewritten", "mod.txt", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "mod.txt"), []byte("someone else"), 0o644))
		}},
		{"mode changed", "chmod.sh", func(t *testing.T, dir string) {
			must(t, os.Chmod(filepath.Join(dir, "chmod.sh"), 0o600))
		}},
		{"added path appeared", "new.txt", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("theirs"), 0o644))
		}},
		{"deleted path already gone", "del.txt", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "del.txt")))
		}},
		{"symlink retargeted", "link", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "link")))
			must(t, os.Symlink("elsewhere", filepath.Join(dir, "link")))
		}},
	}
	// An edit within the timestamp step of the checks' measure keeps
	// every stat fact: where the checks compared bytes (Before carries
	// their digest), the backup must be those bytes.
	t.Run("bytes other than the checks compared", func(t *testing.T) {
		b := p.newBase(t)
		ops := p.ops(t, b)
		for i := range ops {
			if ops[i].Path == "mod.txt" {
				ops[i].Before.Digest = manifest.HashBytes([]byte("what the checks read"))
			}
		}
		before := snapshot(t, b.dir)
		_, err := Prepare(context.Background(), b.root, b.jdir, txID, ops)
		var d *DriftError
		if !errors.As(err, &d) || d.Path != "mod.txt" {
			t.Fatalf("Prepare error = %v, want a *DriftError naming mod.txt", err)
		}
		sameTree(t, "base after a refused Prepare", snapshot(t, b.dir), before)
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := p.newBase(t)
			ops := p.ops(t, b)
			testbin.NextTick(t, t.TempDir()) // the change must move ctime visibly
			tt.change(t, b.dir)
			before := snapshot(t, b.dir)
			_, err := Prepare(context.Background(), b.root, b.jdir, txID, ops)
			var d *DriftError
			if !errors.As(err, &d) {
				t.Fatalf("Prepare error = %v, want a *DriftError", err)
			}
			if d.Path != tt.path {
				t.Errorf("DriftError names %q, want %q", d.Path, tt.path)
			}
			sameTree(t, "base after a refused Prepare", snapshot(t, b.dir), before)
		})
	}
}

// TestApplyKeepsUnknownContent: a directory the change set deletes, which
// gained a file the transaction never saw, is kept with that file.
func TestApplyKeepsUnknownContent(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	unknown := filepath.Join(b.dir, "olddir", "deep", "theirs.txt")
	must(t, os.WriteFile(unknown, []byte("not the transaction's"), 0o644))
	before := snapshot(t, b.dir)
	j := p.prepare(t, b) // Before measured now, as the commit's checks do
	res, err := Apply(context.Background(), b.root, j, p.objects)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if strings.Join(res.Kept, ",") != "olddir,olddir/deep" {
		t.Errorf("Kept = %q, want olddir and olddir/deep", res.Kept)
	}
	if got, err := os.ReadFile(unknown); err != nil || string(got) != "not the transaction's" {
		t.Fatalf("unknown file after Apply: %q, %v", got, err)
	}
	for _, gone := range []string{"olddir/a", "olddir/deep/b"} {
		if _, err := os.Lstat(filepath.Join(b.dir, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived its deletion: %v", gone, err)
		}
	}
	restore(t, b, j)
	sameTree(t, "base after Restore", snapshot(t, b.dir), before)
}

// TestApplyRefusesSymlinkSwap swaps a directory the plan writes into for a
// symlink to a directory outside the base, after Prepare and before Apply.
func TestApplyRefusesSymlinkSwap(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	swap := func(t *testing.T, b *base, rel string) (outside, saved string, outsideBefore map[string]snap) {
		t.Helper()
		outside = t.TempDir()
		build(t, outside, []node{file("f", "outside f", 0o644), file("edit.txt", "outside edit", 0o644), file("keep", "k", 0o644)})
		outsideBefore = snapshot(t, outside)
		saved = filepath.Join(t.TempDir(), "saved")
		must(t, os.Rename(filepath.Join(b.dir, rel), saved))
		must(t, os.Symlink(outside, filepath.Join(b.dir, rel)))
		return outside, saved, outsideBefore
	}

	// keepdir is only the parent of a changed file, not itself journaled:
	// Restore cannot reach keepdir/edit.txt through the symlink, reports
	// it unreachable, and leaves the directory entry it does not own.
	t.Run("unjournaled parent", func(t *testing.T) {
		b := p.newBase(t)
		before := snapshot(t, b.dir)
		j := p.prepare(t, b)
		outside, saved, outsideBefore := swap(t, b, "keepdir")
		if _, err := Apply(context.Background(), b.root, j, p.objects); err == nil {
			t.Fatal("Apply wrote through a symlink swapped in for a directory")
		}
		sameTree(t, "outside directory after Apply", snapshot(t, outside), outsideBefore)
		// The backup of keepdir/edit.txt is the only copy of its content
		// before the apply: Restore fails closed and keeps the journal.
		if _, err := Restore(context.Background(), b.root, j, b.jdir); err == nil || !strings.Contains(err.Error(), `"keepdir/edit.txt"`) {
			t.Errorf("Restore with keepdir unreachable: err = %v, want a refusal naming keepdir/edit.txt", err)
		}
		if e, err := manifest.Lstat(filepath.Join(b.dir, "keepdir")); err != nil || e.Kind != manifest.KindSymlink {
			t.Errorf("keepdir after Restore: %+v %v; the symlink it does not own should be left", e, err)
		}
		sameTree(t, "outside directory after Restore", snapshot(t, outside), outsideBefore)
		// Once the directory is back, Restore puts the rest back exactly.
		must(t, os.Remove(filepath.Join(b.dir, "keepdir")))
		must(t, os.Rename(saved, filepath.Join(b.dir, "keepdir")))
		restore(t, b, j)
		sameTree(t, "base after Restore", snapshot(t, b.dir), before)
	})

	// sub is journaled (its mode changes): Restore owns it, so it takes
	// the symlink away (saving it as displaced) and rebuilds sub from the
	// journal, still without writing outside.
	t.Run("journaled dir", func(t *testing.T) {
		b := p.newBase(t)
		before := snapshot(t, b.dir)
		j := p.prepare(t, b)
		outside, _, outsideBefore := swap(t, b, "sub")
		if _, err := Apply(context.Background(), b.root, j, p.objects); err == nil {
			t.Fatal("Apply wrote through a symlink swapped in for a directory")
		}
		sameTree(t, "outside directory after Apply", snapshot(t, outside), outsideBefore)
		rr := restore(t, b, j)
		sameTree(t, "outside directory after Restore", snapshot(t, outside), outsideBefore)
		// Restore replaced the symlink at sub with a directory, so its
		// journaled children are reachable again and must be restored,
		// not skipped as unreachable.
		for _, u := range rr.Unreachable {
			if _, err := measure(b.root, u); !escaped(err) {
				t.Errorf("Restore skipped %s as unreachable, but after it rebuilt sub the path is reachable and was not restored", u)
			}
		}
		sameTree(t, "base after Restore", snapshot(t, b.dir), before)
		if len(rr.Displaced) != 1 || !strings.HasPrefix(rr.Displaced[0], "sub -> ") {
			t.Errorf("Displaced = %q, want the symlink at sub saved", rr.Displaced)
		}
	})
}

func TestApplyRefusesAlteredObject(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	before := snapshot(t, b.dir)
	j := p.prepare(t, b)
	for _, op := range j.Ops {
		if op.Path == "new.txt" {
			must(t, os.WriteFile(changeset.ObjectPath(p.objects, op.After.Digest), []byte("swapped!"), 0o600))
		}
	}
	if _, err := Apply(context.Background(), b.root, j, p.objects); err == nil {
		t.Fatal("Apply wrote an object whose bytes do not match its digest")
	}
	if _, err := os.Lstat(filepath.Join(b.dir, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("new.txt was written from an altered object: %v", err)
	}
	restore(t, b, j)
	sameTree(t, "base after Restore", snapshot(t, b.dir), before)
}

// TestRestoreDisplacesForeignWrite: content someone wrote to a journaled
// path after the crash is saved before the path is restored.
func TestRestoreDisplacesForeignWrite(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	before := snapshot(t, b.dir)
	j := p.prepare(t, b)
	_, err := Apply(context.Background(), b.root, j, p.objects)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(b.dir, "mod.txt"), []byte("written after the crash"), 0o644))
	rr := restore(t, b, j)
	if len(rr.Displaced) != 1 || !strings.HasPrefix(rr.Displaced[0], "mod.txt -> ") {
		t.Fatalf("Displaced = %q, want mod.txt", rr.Displaced)
	}
	saved := strings.TrimPrefix(rr.Displaced[0], "mod.txt -> ")
	if got, err := os.ReadFile(saved); err != nil || string(got) != "written after the crash" {
		t.Fatalf("displaced copy %s: %q, %v", saved, got, err)
	}
	sameTree(t, "base after Restore", snapshot(t, b.dir), before)
}

func TestPrepareLeavesBaseUntouchedWithFIFO(t *testing.T) {
	// A FIFO where the plan expects a file: Prepare must neither block on
	// it nor back it up.
	p := newPlan(t, []node{file("f", "old", 0o644)}, func(t *testing.T, s string) {
		must(t, os.WriteFile(filepath.Join(s, "f"), []byte("new!"), 0o644))
	})
	b := p.newBase(t)
	ops := p.ops(t, b)
	must(t, os.Remove(filepath.Join(b.dir, "f")))
	must(t, syscall.Mkfifo(filepath.Join(b.dir, "f"), 0o644))
	done := make(chan error, 1)
	go func() {
		_, err := Prepare(context.Background(), b.root, b.jdir, txID, ops)
		done <- err
	}()
	select {
	case err := <-done:
		var d *DriftError
		if !errors.As(err, &d) {
			t.Fatalf("Prepare error = %v, want a *DriftError", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Prepare blocked on a FIFO")
	}
}

func FuzzLoad(f *testing.F) {
	j := &Journal{Version: 1, TxID: txID, Base: "/base", Ops: []Op{
		{Path: "a", After: manifest.Entry{Kind: manifest.KindFile, Mode: 0o644, Digest: manifest.HashBytes(nil)}},
		{Path: "b\xff", Before: manifest.Entry{Kind: manifest.KindFile, Mode: 0o600}, Backup: "000001"},
	}}
	d, err := j.digest()
	if err != nil {
		f.Fatal(err)
	}
	j.Digest = d
	good, err := json.Marshal(j)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"version":1,"ops":null,"digest":""}`))
	f.Add([]byte(`{"version":1,"ops":[{"path":{"base64":"Lg=="},"before":{"kind":"dir"}}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(Path(dir), data, 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := Load(dir)
		if err != nil {
			return
		}
		d, err := j.digest()
		if err != nil || d != j.Digest {
			t.Fatalf("Load accepted a journal whose digest does not match: %v", err)
		}
		for i := 1; i < len(j.Ops); i++ {
			if j.Ops[i-1].Path >= j.Ops[i].Path {
				t.Fatalf("Load accepted operations out of order")
			}
		}
	})
}

// TestRestoreDoesNotTrustAReusedInode: once an apply has let an original
// go (unlinked it after checking it), the file system may give its inode
// number to a file created later — a killed restore's own, still empty,
// temporary file. A restore must not take that file for the original by
// its device and inode and put it back: it restores the backup.
func TestRestoreDoesNotTrustAReusedInode(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	before := snapshot(t, b.dir)
	j := p.prepare(t, b)
	_, err := Apply(context.Background(), b.root, j, p.objects)
	must(t, err)
	if _, err := os.Lstat(filepath.Join(b.jdir, releasedFile)); err != nil {
		t.Fatalf("the apply let originals go without recording it: %v", err)
	}
	// A killed restore's empty temporary file that got mod.txt's old
	// inode number: made so by giving the journal its number.
	i := -1
	for k, op := range j.Ops {
		if op.Path == "mod.txt" {
			i = k
		}
	}
	tmp := opName(j.TxID, i, "mod.txt")
	must(t, os.WriteFile(filepath.Join(b.dir, tmp), nil, 0o600))
	fi, err := os.Lstat(filepath.Join(b.dir, tmp))
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	j.Ops[i].Before.Ino, j.Ops[i].Before.Dev = st.Ino, uint64(st.Dev)
	res := restore(t, b, j)
	if len(res.Edited) > 0 {
		t.Errorf("restore took a file with a reused inode number for the original: %v", res.Edited)
	}
	sameTree(t, "base after Restore", snapshot(t, b.dir), before)
}

// TestSealIsMarshal: the journal Prepare writes, sealed from one encoding,
// is byte for byte what json.Marshal makes of it with its digest set, and
// Decode accepts it.
func TestSealIsMarshal(t *testing.T) {
	p := newPlan(t, mixedBase, mixedEdit)
	b := p.newBase(t)
	j := p.prepare(t, b)
	got, err := os.ReadFile(Path(b.jdir))
	must(t, err)
	want, err := json.Marshal(j)
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("the sealed journal differs from its encoding:\n%s\n%s", got, want)
	}
	d, err := j.digest()
	must(t, err)
	if d != j.Digest {
		t.Fatalf("sealed with digest %s, the journal's is %s", j.Digest, d)
	}
	if _, err := Decode(Path(b.jdir), got); err != nil {
		t.Fatalf("Decode: %v", err)
	}
}

// TestOpJSONIsMarshal: an operation encodes as encoding/json encodes its
// on-disk form.
func TestOpJSONIsMarshal(t *testing.T) {
	for _, o := range []Op{
		{Path: "a", Before: manifest.Entry{Kind: manifest.KindFile, Mode: 0o644, Digest: "sha256:00"}, After: manifest.Entry{Kind: manifest.KindFile, Mode: 0o600}, Backup: "000001"},
		{Path: "d/<&>\"\\\xff", After: manifest.Entry{Kind: manifest.KindSymlink, Target: "t\xfe"}},
		{Path: "日本\u2028"},
	} {
		want, err := json.Marshal(opJSON{manifest.Bytes(o.Path), o.Before, o.After, o.Backup})
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(o)
		if err != nil || string(got) != string(want) {
			t.Fatalf("op %+v\n got %s (%v)\nwant %s", o, got, err, want)
		}
	}
}
