package stage

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/testbin"
)

func needOverlay(t *testing.T) {
	t.Helper()
	if ok, reason := ProbeOverlay(t.TempDir()); !ok {
		testbin.Missing(t, "overlay: %s", reason)
	}
}

// overlayBase is a small base with every kind the diff must tell apart.
func overlayBase(t *testing.T) string {
	t.Helper()
	base := filepath.Join(t.TempDir(), "base")
	for _, d := range []string{"keep", "gone/deep", "redo/sub", "retype", ".git/refs", "node_modules/p", "mode"} {
		must(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	for p, c := range map[string]string{
		"edit.txt": "one\n", "same.txt": "same\n", "touched.txt": "t\n", "chmod.sh": "#!/bin/sh\n",
		"del.txt": "d\n", "keep/k": "k\n", "gone/g": "g\n", "gone/deep/x": "x\n",
		"redo/a": "a\n", "redo/b": "b\n", "redo/sub/c": "c\n", "retype/r": "r\n",
		".git/HEAD": "ref\n", "node_modules/p/i.js": "js\n", "mode/m": "m\n", "grow": "g",
	} {
		must(t, os.WriteFile(filepath.Join(base, p), []byte(c), 0o644))
	}
	must(t, os.Symlink("keep/k", filepath.Join(base, "link")))
	// The base was there well before the open: its changes are older
	// than the open mark by more than the clock's window.
	waitProven(t, base)
	return base
}

// agentWork is what a command does in the staged tree: a bit of
// everything, including writes that change nothing.
func agentWork(t *testing.T, dir string) {
	t.Helper()
	p := func(rel string) string { return filepath.Join(dir, rel) }
	must(t, os.WriteFile(p("edit.txt"), []byte("two\n"), 0o644))
	must(t, os.WriteFile(p("same.txt"), []byte("same\n"), 0o644)) // rewritten with the same bytes
	must(t, os.Chtimes(p("touched.txt"), time0, time0))           // copied up, content untouched
	must(t, os.Chmod(p("chmod.sh"), 0o755))
	must(t, os.Remove(p("del.txt")))
	must(t, os.RemoveAll(p("gone")))
	must(t, os.RemoveAll(p("redo")))
	must(t, os.MkdirAll(p("redo/sub"), 0o755))
	must(t, os.WriteFile(p("redo/a"), []byte("a\n"), 0o644)) // re-created identical
	must(t, os.WriteFile(p("redo/new"), []byte("n\n"), 0o644))
	must(t, os.RemoveAll(p("retype")))
	must(t, os.WriteFile(p("retype"), []byte("now a file\n"), 0o644))
	must(t, os.MkdirAll(p("added/dir"), 0o700))
	must(t, os.WriteFile(p("added/dir/f"), []byte("f\n"), 0o600))
	must(t, os.Remove(p("link")))
	must(t, os.Symlink("edit.txt", p("link")))
	must(t, os.WriteFile(p(".git/HEAD"), []byte("changed\n"), 0o644))
	must(t, os.MkdirAll(p("node_modules/p"), 0o755))
	must(t, os.WriteFile(p("node_modules/p/i.js"), []byte("excluded\n"), 0o644))
	must(t, os.Chmod(p("mode"), 0o700))
	must(t, os.WriteFile(p("grow"), []byte("gg"), 0o644))
	must(t, syscall.Mkfifo(p("fifo"), 0o644))
}

var time0 = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

func summary(set *changeset.Set) []string {
	var out []string
	for _, c := range set.Changes {
		out = append(out, fmt.Sprintf("%s %s %s>%s", c.Op, c.Path, c.Base.Kind, c.Result.Kind))
	}
	for _, u := range set.Unsupported {
		out = append(out, "unsupported "+string(u))
	}
	return append(out, fmt.Sprintf("gitmeta>0=%v", set.GitMeta > 0))
}

// TestOverlayMatchesCopyDiff holds the overlay's upper-layer diff to the
// copy backend's full diff of the same work: the copy diff is the oracle.
func TestOverlayMatchesCopyDiff(t *testing.T) {
	needOverlay(t)
	skip := func(rel string, isDir bool) bool { return rel == "node_modules" }

	base := overlayBase(t)
	cdir := stageDir(t)
	res, err := copyBackend{}.Stage(t.Context(), Request{Base: base, Dir: cdir, Skip: skip})
	must(t, err)
	agentWork(t, cdir)
	now, err := manifest.Walk(t.Context(), cdir, manifest.WalkOptions{})
	must(t, err)
	want, err := changeset.Diff(t.Context(), changeset.Input{Base: res.Base, StagedOpen: res.Staged, Staged: now, BaseDir: base, StagedDir: cdir})
	must(t, err)

	odir := filepath.Join(t.TempDir(), "staged")
	ores, err := overlayBackend{}.Stage(t.Context(), Request{Base: base, Dir: odir, Skip: skip})
	must(t, err)
	t.Cleanup(func() { overlayBackend{}.Remove(t.Context(), odir) })
	if len(ores.Base.Entries) != 0 {
		t.Errorf("overlay staging measured the base (%d entries): it must cost one mount", len(ores.Base.Entries))
	}
	agentWork(t, odir)
	got, err := overlayBackend{}.Changes(t.Context(), DiffRequest{Base: base, Dir: odir, Skip: skip, BaseClock: tclock(t)})
	must(t, err)

	// The copy backend keeps node_modules out of the staged tree, so its
	// diff sees the command's write there as an add; the overlay shows the
	// base's excluded paths and leaves writes there out of the change set.
	w := slices.DeleteFunc(summary(want), func(s string) bool { return strings.Contains(s, "node_modules") })
	if g := summary(got); !slices.Equal(g, w) {
		t.Errorf("overlay change set\n%s\nwant (copy backend)\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	for _, c := range got.Changes {
		if c.Base.Kind != manifest.KindNone && c.Base.Kind != manifest.KindDir {
			b, ok := res.Base.Lookup(c.Path)
			if !ok || !manifest.SameStat(*b, c.Base) {
				t.Errorf("%s: base entry %+v, want the base at open %+v", c.Path, c.Base, b)
			}
		}
	}
	if out, err := exec.Command("diff", "-r", "--no-dereference", "-x", "fifo", "-x", "node_modules", cdir, odir).CombinedOutput(); err != nil {
		t.Errorf("the overlay's merged tree differs from the copy's: %v\n%s", err, out)
	}
}

// TestOverlayBaseChangedSinceOpen: a base file edited after open and then
// written by the command must not look unchanged to the commit's drift
// check; a base edit the command never touched is no change at all.
func TestOverlayBaseChangedSinceOpen(t *testing.T) {
	needOverlay(t)
	base := overlayBase(t)
	dir := filepath.Join(t.TempDir(), "staged")
	_, err := overlayBackend{}.Stage(t.Context(), Request{Base: base, Dir: dir})
	must(t, err)
	t.Cleanup(func() { overlayBackend{}.Remove(t.Context(), dir) })
	must(t, os.WriteFile(filepath.Join(base, "edit.txt"), []byte("user\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "keep/k"), []byte("user\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "edit.txt"), []byte("agent\n"), 0o644))
	set, err := overlayBackend{}.Changes(t.Context(), DiffRequest{Base: base, Dir: dir, BaseClock: tclock(t)})
	must(t, err)
	if len(set.Changes) != 1 || set.Changes[0].Path != "edit.txt" {
		t.Fatalf("changes %q, want edit.txt alone", summary(set))
	}
	now, err := manifest.Lstat(filepath.Join(base, "edit.txt"))
	must(t, err)
	if manifest.SameStat(now, set.Changes[0].Base) {
		t.Fatal("the base entry of a path edited in the base since open matches the base now: the commit would overwrite the user's edit")
	}
}

func TestOverlayRemove(t *testing.T) {
	needOverlay(t)
	base := overlayBase(t)
	dir := filepath.Join(t.TempDir(), "staged")
	_, err := overlayBackend{}.Stage(t.Context(), Request{Base: base, Dir: dir})
	must(t, err)
	before := facts(t, base, nil)
	// A process still inside the mount: the unmount is lazy, the base is
	// never touched, and the layers go.
	cmd := exec.Command("sleep", "30")
	cmd.Dir = filepath.Join(dir, "keep")
	must(t, cmd.Start())
	defer cmd.Process.Kill()
	must(t, overlayBackend{}.Remove(t.Context(), dir))
	for _, p := range []string{dir, layersDir(dir)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there after Remove: %v", p, err)
		}
	}
	after := facts(t, base, nil)
	if len(after) != len(before) {
		t.Fatalf("Remove changed the base: %d paths, had %d", len(after), len(before))
	}
	must(t, overlayBackend{}.Remove(t.Context(), dir)) // removing twice is no error
}

// TestOverlayRemount: a mount lost (as in a reboot) comes back over the
// kept layers when the change set is asked for.
func TestOverlayRemount(t *testing.T) {
	needOverlay(t)
	base := overlayBase(t)
	dir := filepath.Join(t.TempDir(), "staged")
	_, err := overlayBackend{}.Stage(t.Context(), Request{Base: base, Dir: dir})
	must(t, err)
	t.Cleanup(func() { overlayBackend{}.Remove(t.Context(), dir) })
	must(t, os.WriteFile(filepath.Join(dir, "new"), []byte("n"), 0o644))
	must(t, unmountAll(dir))
	set, err := overlayBackend{}.Changes(t.Context(), DiffRequest{Base: base, Dir: dir, BaseClock: tclock(t)})
	must(t, err)
	if len(set.Changes) != 1 || set.Changes[0].Path != "new" {
		t.Fatalf("changes after remount %q, want new", summary(set))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "new")); err != nil || string(b) != "n" {
		t.Fatalf("staged file after remount: %q, %v", b, err)
	}
}

func TestEscapeOpt(t *testing.T) {
	if got := escapeOpt(`/a,b:c\d`); got != `/a\,b\:c\\d` {
		t.Errorf("escapeOpt = %s", got)
	}
}

// TestKernelAtLeast: overlayfs mounts in an unprivileged user namespace
// from Linux 5.11; distribution suffixes do not matter, and a release that
// does not parse is taken as too old rather than guessed.
func TestKernelAtLeast(t *testing.T) {
	for release, want := range map[string]bool{
		"5.11.0": true, "5.10.200-lts": false, "6.8.0-45-generic": true, "4.19.0": false,
		"5.11": true, "10.0.1": true, "5.9.16-fc": false, "": false, "x.y": false,
	} {
		if got := kernelAtLeast(release, 5, 11); got != want {
			t.Errorf("kernelAtLeast(%q, 5, 11) = %v, want %v", release, got, want)
		}
	}
}
