package torture

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"

	"github.com/airlockdev/airlock/internal/testbin"
)

// hostileBase is a small base for the attacks: a directory d with files, a
// nested directory, and a symlink pointing outside the base.
func hostileBase(w *world, outside string) tree {
	w.t.Helper()
	t := tree{
		".":        {Kind: kDir, Mode: 0o755},
		"d":        {Kind: kDir, Mode: 0o755},
		"d/a":      {Kind: kFile, Mode: 0o644, Data: "a\n"},
		"d/b":      {Kind: kFile, Mode: 0o644, Data: "b\n"},
		"d/sub":    {Kind: kDir, Mode: 0o755},
		"d/sub/c":  {Kind: kFile, Mode: 0o644, Data: "c\n"},
		"e":        {Kind: kFile, Mode: 0o644, Data: "e\n"},
		"link":     {Kind: kSymlink, Data: outside},
		"linkfile": {Kind: kSymlink, Data: filepath.Join(outside, "x")},
	}
	materialize(w.t, w.base, t)
	return t
}

// TestHostileSymlinkOutside: a symlink in the base points outside it. A
// change set that retargets it applies it as a symlink; one that writes
// beneath it, or through a directory swapped for one before the commit, is
// refused; nothing outside the base is ever written.
func TestHostileSymlinkOutside(t *testing.T) {
	t.Run("retarget", func(t *testing.T) {
		w := newWorld(t)
		out := w.outside()
		before := hostileBase(w, out)
		world := w.world()
		staged := w.open("h1")
		after := before.clone()
		after["link"] = node{Kind: kSymlink, Data: filepath.Join(out, "sub")}
		after["linkfile"] = node{Kind: kSymlink, Data: "/etc/passwd"}
		materialize(t, staged, after)
		w.must("commit", "h1")
		if got := w.beforeOrAfter(before, after); got != "after" {
			t.Fatalf("the base is %s, want after", got)
		}
		w.untouched(world)
	})
	t.Run("link-replaced-by-directory", func(t *testing.T) {
		// The staged tree replaces the symlink by a real directory with
		// files: the base must get a directory, never a write through the
		// old symlink. (airlock refuses this today; see
		// TestSymlinkBecomesDirectory.)
		w := newWorld(t)
		out := w.outside()
		before := hostileBase(w, out)
		world := w.world()
		staged := w.open("h2")
		after := before.clone()
		after["link"] = node{Kind: kDir, Mode: 0o755}
		after["link/x"] = node{Kind: kFile, Mode: 0o644, Data: "through the link?\n"}
		after["link/secret"] = node{Kind: kFile, Mode: 0o644, Data: "overwritten?\n"}
		materialize(t, staged, after)
		r := w.airlock("commit", "h2")
		if r.Code != 0 && r.Code != 75 {
			t.Fatalf("want a commit or a refusal: %v", r)
		}
		w.beforeOrAfter(before, after)
		w.untouched(world)
	})
	t.Run("parent-swapped-before-commit", func(t *testing.T) {
		w := newWorld(t)
		out := w.outside()
		hostileBase(w, out)
		world := w.world()
		staged := w.open("h3")
		check(t, os.WriteFile(filepath.Join(staged, "d/a"), []byte("new a\n"), 0o644))
		check(t, os.WriteFile(filepath.Join(staged, "d/x"), []byte("new x\n"), 0o644))
		check(t, os.Remove(filepath.Join(staged, "d/b")))
		// The base's d becomes a symlink to the outside directory, which
		// also holds an x.
		check(t, os.Rename(filepath.Join(w.base, "d"), filepath.Join(w.base, "d.moved")))
		check(t, os.Symlink(out, filepath.Join(w.base, "d")))
		swapped := snapshot(t, w.base)
		r := w.airlock("commit", "h3")
		if r.Code != 75 || (r.Settle["refusal"] != "BaseDrift" && r.Settle["refusal"] != "BoundaryEscape") {
			t.Fatalf("want a BaseDrift or BoundaryEscape refusal: %v", r)
		}
		w.beforeOrAfter(swapped, nil)
		w.untouched(world)
	})
}

// TestHostileSwapDuringCommit swaps a directory of the base for a symlink
// to a directory outside it in the middle of a commit: while it is paused
// after the checks or after its journal is synced, or after it was killed
// part-way through the apply (then recover runs over the swapped tree).
// airlock must refuse, or fail closed and keep the journal; nothing outside
// the base is ever written, no temporary file is left in the base, and
// once the user puts the directory back, recover restores the base
// exactly.
func TestHostileSwapDuringCommit(t *testing.T) {
	type how struct{ pause, fault string }
	for _, h := range []how{{pause: "checked"}, {pause: "journal-synced"}, {fault: "apply:1"}, {fault: "apply:3"}, {fault: "applied"}} {
		name := h.pause + h.fault
		t.Run(strings.ReplaceAll(name, ":", "-"), func(t *testing.T) {
			w := newWorld(t)
			out := w.outside()
			before := hostileBase(w, out)
			world := w.world()
			staged := w.open("s1")
			check(t, os.WriteFile(filepath.Join(staged, "d/a"), []byte("new a\n"), 0o644))
			check(t, os.WriteFile(filepath.Join(staged, "d/x"), []byte("new x\n"), 0o644))
			check(t, os.WriteFile(filepath.Join(staged, "d/sub/secret"), []byte("new secret\n"), 0o644))
			check(t, os.Remove(filepath.Join(staged, "d/b")))
			check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
			d, moved := filepath.Join(w.base, "d"), filepath.Join(w.base, "d.moved")
			swap := func() {
				check(t, os.Rename(d, moved))
				check(t, os.Symlink(out, d))
			}
			var r result
			if h.pause != "" {
				pause := t.TempDir()
				p := w.start([]string{"AIRLOCK_TEST_PAUSE=" + h.pause + ":" + pause}, "commit", "s1")
				waitFile(t, filepath.Join(pause, "reached"), p)
				swap()
				check(t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o644))
				r = p.WaitSettled()
			} else {
				r = w.airlockEnv([]string{"AIRLOCK_TEST_FAULT=" + h.fault}, "commit", "s1")
				if r.Signal != syscall.SIGKILL {
					t.Fatalf("the fault point was not reached: %v", r)
				}
				swap()
			}
			swapped := snapshot(t, w.base)
			failedClosed := false
			switch {
			case r.Code == 75:
				k := r.Settle["refusal"]
				if k != "BoundaryEscape" && k != "ApplyFailed" && k != "BaseDrift" {
					t.Fatalf("refused with %s: %v", k, r)
				}
				// Refused: nothing of the change set is in the base.
				w.beforeOrAfter(swapped, nil)
			case r.Code == 125 || r.Signal == syscall.SIGKILL:
				rr := w.airlock("recover", "--workdir", w.base)
				if rr.Code != 0 && !(rr.Code == 125 && strings.Contains(rr.Stderr, "d/")) {
					t.Fatalf("recover over the swapped tree must restore or fail closed naming the unreachable paths: %v", rr)
				}
				// Failed closed: the files the killed apply had moved
				// aside stay beside their paths (in the directory the
				// user moved away) until recover can reach them.
				failedClosed = rr.Code != 0
			default:
				t.Fatalf("want a refusal or a failure: %v", r)
			}
			w.untouched(world)
			noTemps := func() {
				t.Helper()
				for p := range snapshot(t, w.base) {
					if strings.Contains(p, ".airlock-") {
						t.Errorf("temporary file left in the base: %s", p)
					}
				}
			}
			if !failedClosed {
				noTemps()
			}
			// The user puts the directory back; recover then finishes and
			// the base is exactly as before the commit.
			check(t, os.Remove(d))
			check(t, os.Rename(moved, d))
			if rr := w.airlock("recover", "--workdir", w.base); rr.Code != 0 {
				t.Fatalf("recover with the directory back: %v", rr)
			}
			if got := w.beforeOrAfter(before, nil); got != "before" {
				t.Fatalf("the base is %s", got)
			}
			w.untouched(world)
			noTemps()
		})
	}
}

// TestPauseMidApply: AIRLOCK_TEST_PAUSE=apply:N:<dir> must pause after the
// Nth apply step, so that a test can race the apply itself.
func TestPauseMidApply(t *testing.T) {
	w := newWorld(t)
	hostileBase(w, w.outside())
	staged := w.open("p1")
	check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
	pause := t.TempDir()
	p := w.start([]string{"AIRLOCK_TEST_PAUSE=apply:1:" + pause}, "commit", "p1")
	waitFile(t, filepath.Join(pause, "reached"), p)
	check(t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o644))
	if r := p.WaitSettled(); r.Code != 0 {
		t.Fatal(r)
	}
}

// waitFile waits until file exists, failing if p ends first.
func waitFile(t *testing.T, file string, p *testbin.Proc) {
	t.Helper()
	var ended <-chan struct{}
	if p != nil {
		ended = p.Done()
	}
	if testbin.WaitFile(file, time.Minute, ended) == nil {
		return
	}
	if p != nil {
		p.Signal(syscall.SIGKILL)
		t.Fatalf("%s never appeared: %v", file, p.WaitSettled())
	}
	t.Fatalf("%s never appeared", file)
}

var badPaths = []string{"../x", "/etc/x", "a/../../x", "d/../../x", "..", "./../x"}

// TestHostileTamperedBaseManifest hand-edits the base manifest of an open
// transaction (the record of the base at open, from which the change set is
// computed) to name paths outside the base: the commit must refuse, never
// write there.
func TestHostileTamperedBaseManifest(t *testing.T) {
	for _, bad := range badPaths {
		t.Run(strings.NewReplacer("/", "_", ".", "dot").Replace(bad), func(t *testing.T) {
			w := newWorld(t)
			out := w.outside()
			before := hostileBase(w, out)
			world := w.world()
			staged := w.open("m1")
			check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
			mf := filepath.Join(w.txDir("m1"), "base.manifest.json")
			m, err := manifest.Load(mf)
			if err != nil {
				t.Fatal(err)
			}
			es := append(m.Entries, manifest.Entry{Path: bad, Kind: manifest.KindFile, Mode: 0o644, Size: 9})
			sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
			data, err := json.Marshal(map[string]any{"version": 1, "entries": es})
			check(t, err)
			check(t, os.WriteFile(mf, data, 0o600))
			r := w.airlock("commit", "m1")
			switch {
			case r.Code == 75 && r.Settle["refusal"] == "BoundaryEscape":
			case r.Code == 125 && strings.Contains(r.Stderr, mf):
			default:
				t.Fatalf("want a BoundaryEscape refusal or a failure naming %s: %v", mf, r)
			}
			w.beforeOrAfter(before, nil)
			w.untouched(world)
		})
	}
}

// TestHostileTamperedJournal pauses a commit once its journal is synced,
// rewrites the journal so that an operation names a path outside the base
// (with a digest recomputed to match, as an attacker who knows the format
// would), and kills the commit: recover must refuse the journal or restore
// without writing outside the base.
func TestHostileTamperedJournal(t *testing.T) {
	for _, bad := range badPaths {
		t.Run(strings.NewReplacer("/", "_", ".", "dot").Replace(bad), func(t *testing.T) {
			w := newWorld(t)
			out := w.outside()
			before := hostileBase(w, out)
			world := w.world()
			staged := w.open("j1")
			check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
			check(t, os.WriteFile(filepath.Join(staged, "d/a"), []byte("new a\n"), 0o644))
			jf := pausedJournal(t, w, "j1")
			j, err := journal.LoadFile(jf)
			if err != nil {
				t.Fatal(err)
			}
			// The forger's digest: sha256 over the JSON without it. It
			// must reproduce the journal's own before the forgery.
			seal := func() {
				j.Digest = ""
				b, err := json.Marshal(j)
				check(t, err)
				j.Digest = manifest.HashBytes(b)
			}
			want := j.Digest
			if seal(); j.Digest != want {
				t.Fatalf("the test cannot forge journal digests: %s, the journal has %s", j.Digest, want)
			}
			j.Ops[0].Path = bad
			sort.Slice(j.Ops, func(a, b int) bool { return j.Ops[a].Path < j.Ops[b].Path })
			seal()
			b, err := json.Marshal(j)
			check(t, err)
			check(t, os.WriteFile(jf, b, 0o600))
			r := w.airlock("recover", "--workdir", w.base)
			wantFailure(t, r, jf)
			if !strings.Contains(r.Stderr, bad) {
				t.Fatalf("the refusal does not name the path %q: %v", bad, r)
			}
			w.beforeOrAfter(before, nil)
			w.untouched(world)
		})
	}
}

// pausedJournal starts a commit of id paused at journal-synced, kills it
// there (the base untouched, its journal complete) and returns the journal
// file.
func pausedJournal(t *testing.T, w *world, id string) string {
	t.Helper()
	r := w.airlockEnv([]string{"AIRLOCK_TEST_FAULT=journal-synced"}, "commit", id)
	if r.Signal != syscall.SIGKILL {
		t.Fatalf("the commit did not stop at journal-synced: %v", r)
	}
	return filepath.Join(w.txDir(id), "journal", "journal.json")
}

// TestHostileUnsupportedEntries: a FIFO, a socket or a device node in the
// staged tree is refused (UnsupportedEntry, naming it), and the base is
// not touched.
func TestHostileUnsupportedEntries(t *testing.T) {
	kinds := map[string]func(t *testing.T, p string){
		"fifo": func(t *testing.T, p string) { check(t, syscall.Mkfifo(p, 0o644)) },
		"socket": func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			check(t, err)
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
		},
		"device": func(t *testing.T, p string) {
			if os.Geteuid() != 0 {
				t.Skip("mknod of a device node needs root")
			}
			check(t, syscall.Mknod(p, syscall.S_IFCHR|0o644, int(1<<8|3))) // like /dev/null
		},
	}
	for name, mk := range kinds {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			before := hostileBase(w, w.outside())
			staged := w.open("u1")
			check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
			mk(t, filepath.Join(staged, "d", "sub", "odd"))
			r := w.airlock("commit", "u1")
			wantRefusal(t, r, "UnsupportedEntry")
			if !strings.Contains(r.Settle["refused_paths"], "d/sub/odd") {
				t.Fatalf("the refusal does not name d/sub/odd: %v", r)
			}
			w.beforeOrAfter(before, nil)
		})
	}
}

// TestHostileRetypeAtDepth: files become directories and directories
// files, and symlinks either, deep in the tree; the commit lands exactly.
func TestHostileRetypeAtDepth(t *testing.T) {
	w := newWorld(t)
	before := tree{
		".":                  {Kind: kDir, Mode: 0o755},
		"a":                  {Kind: kDir, Mode: 0o755},
		"a/b":                {Kind: kDir, Mode: 0o755},
		"a/b/c":              {Kind: kDir, Mode: 0o755},
		"a/b/c/f":            {Kind: kFile, Mode: 0o644, Data: "file that becomes a dir"},
		"a/b/c/d":            {Kind: kDir, Mode: 0o750},
		"a/b/c/d/x":          {Kind: kFile, Mode: 0o644, Data: "x"},
		"a/b/c/d/y":          {Kind: kDir, Mode: 0o755},
		"a/b/c/d/y/z":        {Kind: kFile, Mode: 0o600, Data: "z"},
		"a/b/c/l":            {Kind: kSymlink, Data: "f"},
		"a/b/c/m":            {Kind: kFile, Mode: 0o644, Data: "becomes a link"},
		"a/b/c/n":            {Kind: kDir, Mode: 0o755},
		"a/b/c/n/only":       {Kind: kFile, Mode: 0o644, Data: "n becomes a link"},
		"a/b/keep":           {Kind: kFile, Mode: 0o644, Data: "keep"},
		"a/b/c/deep":         {Kind: kDir, Mode: 0o755},
		"a/b/c/deep/er":      {Kind: kDir, Mode: 0o755},
		"a/b/c/deep/er/file": {Kind: kFile, Mode: 0o644, Data: "deep"},
	}
	materialize(t, w.base, before)
	after := before.clone()
	after.remove("a/b/c/f")
	after["a/b/c/f"] = node{Kind: kDir, Mode: 0o700}
	after["a/b/c/f/child"] = node{Kind: kFile, Mode: 0o644, Data: "child"}
	after["a/b/c/f/sub"] = node{Kind: kDir, Mode: 0o755}
	after["a/b/c/f/sub/leaf"] = node{Kind: kFile, Mode: 0o755, Data: "leaf"}
	after.remove("a/b/c/d")
	after["a/b/c/d"] = node{Kind: kFile, Mode: 0o644, Data: "dir that became a file"}
	after["a/b/c/l"] = node{Kind: kFile, Mode: 0o644, Data: "link that became a file"}
	after["a/b/c/m"] = node{Kind: kSymlink, Data: "../keep"}
	after.remove("a/b/c/deep/er")
	after["a/b/c/deep/er"] = node{Kind: kFile, Mode: 0o644, Data: "was a dir of a dir"}
	staged := w.open("r1")
	materialize(t, staged, after)
	w.must("commit", "r1")
	if got := w.beforeOrAfter(before, after); got != "after" {
		t.Fatalf("the base is %s, want after", got)
	}
	// And all the way back, as undo would.
	staged = w.open("r2")
	materialize(t, staged, before)
	w.must("commit", "r2")
	if got := w.beforeOrAfter(before, after); got != "before" {
		t.Fatalf("the base is %s after the way back, want before", got)
	}
}

// TestSymlinkBecomesDirectory: replacing a symlink by a real directory
// with files is an ordinary change (rm node_modules; mkdir node_modules),
// and nothing is reached through a symlink once it is applied: it commits.
func TestSymlinkBecomesDirectory(t *testing.T) {
	w := newWorld(t)
	before := tree{".": {Kind: kDir, Mode: 0o755}, "d": {Kind: kDir, Mode: 0o755}, "l": {Kind: kSymlink, Data: "d"}}
	materialize(t, w.base, before)
	after := tree{".": {Kind: kDir, Mode: 0o755}, "d": {Kind: kDir, Mode: 0o755}, "l": {Kind: kDir, Mode: 0o755}, "l/x": {Kind: kFile, Mode: 0o644, Data: "x"}}
	staged := w.open("k1")
	materialize(t, staged, after)
	r := w.airlock("commit", "k1")
	if r.Code != 0 {
		t.Fatalf("a symlink replaced by a directory with a file is refused: %v", r)
	}
	if got := w.beforeOrAfter(before, after); got != "after" {
		t.Fatalf("the base is %s, want after", got)
	}
}

// TestDirectoryBecomesSymlink: replacing a directory that holds files by a
// symlink (rm -r vendor; ln -s ../shared/vendor vendor) deletes the files
// first and then creates the symlink; nothing is written through it. airlock
// refuses it with BoundaryEscape today.
func TestDirectoryBecomesSymlink(t *testing.T) {
	w := newWorld(t)
	before := tree{".": {Kind: kDir, Mode: 0o755}, "d": {Kind: kDir, Mode: 0o755}, "n": {Kind: kDir, Mode: 0o755}, "n/only": {Kind: kFile, Mode: 0o644, Data: "x"}}
	materialize(t, w.base, before)
	after := tree{".": {Kind: kDir, Mode: 0o755}, "d": {Kind: kDir, Mode: 0o755}, "n": {Kind: kSymlink, Data: "d"}}
	staged := w.open("k2")
	materialize(t, staged, after)
	r := w.airlock("commit", "k2")
	if r.Code != 0 {
		t.Fatalf("a directory replaced by a symlink is refused: %v", r)
	}
	if got := w.beforeOrAfter(before, after); got != "after" {
		t.Fatalf("the base is %s, want after", got)
	}
}

// TestHostileTamperedFrozenObject rewrites the frozen copy of a changed
// file (changes/objects/<digest>) while the commit is paused after its
// checks: the bytes that land must be the bytes that were checked, so the
// apply must notice and roll back, never write the altered bytes.
func TestHostileTamperedFrozenObject(t *testing.T) {
	w := newWorld(t)
	before := hostileBase(w, w.outside())
	staged := w.open("o1")
	check(t, os.WriteFile(filepath.Join(staged, "d/a"), []byte("checked bytes\n"), 0o644))
	check(t, os.WriteFile(filepath.Join(staged, "e"), []byte("new e\n"), 0o644))
	pause := t.TempDir()
	p := w.start([]string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, "commit", "o1")
	waitFile(t, filepath.Join(pause, "reached"), p)
	objs, _ := filepath.Glob(filepath.Join(w.txDir("o1"), "changes", "objects", "*"))
	n := 0
	for _, o := range objs {
		if b, err := os.ReadFile(o); err == nil && string(b) == "checked bytes\n" {
			check(t, os.WriteFile(o, []byte("evil bytes!!!\n"), 0o600))
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no frozen object holds the staged bytes among %v", objs)
	}
	check(t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o644))
	r := p.WaitSettled()
	switch {
	case r.Code == 75 && r.Settle["refusal"] == "ApplyFailed":
	case r.Code == 125:
		w.must("recover", "--workdir", w.base)
	default:
		t.Fatalf("want ApplyFailed or a failure: %v", r)
	}
	if got := w.beforeOrAfter(before, nil); got != "before" {
		t.Fatalf("the base is %s", got)
	}
}
