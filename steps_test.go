package airlock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/basecheck"
	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/safefs"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeTree writes files (content by slash path; a value starting with
// "->" makes a symlink to the rest) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if target, ok := strings.CutPrefix(content, "->"); ok {
			must(t, os.Symlink(target, p))
			continue
		}
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func newBaseDir(t *testing.T, files map[string]string) string {
	t.Helper()
	base := filepath.Join(t.TempDir(), "base")
	must(t, os.Mkdir(base, 0o755))
	writeTree(t, base, files)
	return base
}

func openRoot(t *testing.T, dir string) *safefs.Root {
	t.Helper()
	r, err := safefs.OpenRoot(dir)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// measured returns the base entry of rel as the change set's Base would
// hold it (Kind none when absent).
func measured(t *testing.T, root *safefs.Root, rel string) manifest.Entry {
	t.Helper()
	e, err := basecheck.Measure(root, rel)
	must(t, err)
	return e
}

func fileResult(content string) manifest.Entry {
	return manifest.Entry{Kind: manifest.KindFile, Mode: 0o644, Size: int64(len(content)), Digest: manifest.HashBytes([]byte(content))}
}

func TestCheckBoundary(t *testing.T) {
	add := func(p string, k manifest.Kind) changeset.Change {
		r := fileResult("x")
		if k == manifest.KindSymlink {
			r = manifest.Entry{Kind: manifest.KindSymlink, Target: "/etc"}
		}
		if k == manifest.KindDir {
			r = manifest.Entry{Kind: manifest.KindDir, Mode: 0o755}
		}
		return changeset.Change{Path: p, Op: changeset.Add, Result: r}
	}
	tests := []struct {
		name    string
		changes []changeset.Change
		escapes []string
		want    []string // nil: no refusal
	}{
		{"clean", []changeset.Change{add("a", manifest.KindFile), add("d", manifest.KindDir), add("d/f", manifest.KindFile), add("l", manifest.KindSymlink)}, nil, nil},
		{"escapes from the drift check", []changeset.Change{add("a", manifest.KindFile)}, []string{"../x", "d/f"}, []string{"../x", "d/f"}},
		{"beneath a symlink the set creates", []changeset.Change{add("l", manifest.KindSymlink), add("l/passwd", manifest.KindFile)}, nil, []string{"l/passwd"}},
		{"deep beneath a created symlink", []changeset.Change{add("l", manifest.KindSymlink), add("l/a/b/c", manifest.KindFile)}, nil, []string{"l/a/b/c"}},
		{"sibling with a common prefix", []changeset.Change{add("l", manifest.KindSymlink), add("l2/f", manifest.KindFile), add("l.d/f", manifest.KindFile)}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := checkBoundary(&changeset.Set{Changes: tt.changes}, tt.escapes)
			if tt.want == nil {
				if r != nil {
					t.Fatalf("refused: %v", r)
				}
				return
			}
			if r == nil {
				t.Fatalf("no refusal, want BoundaryEscape for %q", tt.want)
			}
			if r.Kind != BoundaryEscape || !slices.Equal(r.Paths, tt.want) {
				t.Errorf("refusal %s %q, want BoundaryEscape %q", r.Kind, r.Paths, tt.want)
			}
		})
	}
}

func TestCheckSharedInode(t *testing.T) {
	setup := func(t *testing.T) (base, staged, objects string, root *safefs.Root, set *changeset.Set) {
		base = newBaseDir(t, map[string]string{"f": "shared", "g": "g"})
		tmp := t.TempDir()
		staged, objects = filepath.Join(tmp, "staged"), filepath.Join(tmp, "objects")
		must(t, os.MkdirAll(staged, 0o755))
		must(t, os.MkdirAll(objects, 0o700))
		root = openRoot(t, base)
		set = &changeset.Set{Changes: []changeset.Change{
			{Path: "f", Op: changeset.Modify, Base: measured(t, root, "f"), Result: fileResult("shared")},
			{Path: "g", Op: changeset.Modify, Base: measured(t, root, "g"), Result: fileResult("G")},
		}}
		must(t, os.WriteFile(filepath.Join(staged, "g"), []byte("G"), 0o644))
		must(t, os.WriteFile(changeset.ObjectPath(objects, fileResult("G").Digest), []byte("G"), 0o600))
		return
	}
	t.Run("independent copies", func(t *testing.T) {
		_, staged, objects, root, set := setup(t)
		must(t, os.WriteFile(filepath.Join(staged, "f"), []byte("shared"), 0o644))
		must(t, os.WriteFile(changeset.ObjectPath(objects, fileResult("shared").Digest), []byte("shared"), 0o600))
		if r := checkSharedInode(root, set, staged, objects); r != nil {
			t.Fatalf("refused independent copies: %v", r)
		}
	})
	t.Run("staged hard link", func(t *testing.T) {
		base, staged, objects, root, set := setup(t)
		must(t, os.Link(filepath.Join(base, "f"), filepath.Join(staged, "f")))
		r := checkSharedInode(root, set, staged, objects)
		if r == nil || r.Kind != SharedInode || !slices.Equal(r.Paths, []string{"f"}) {
			t.Fatalf("refusal %v, want SharedInode for f", r)
		}
	})
	t.Run("frozen object hard link", func(t *testing.T) {
		base, staged, objects, root, set := setup(t)
		must(t, os.WriteFile(filepath.Join(staged, "f"), []byte("shared"), 0o644))
		must(t, os.Link(filepath.Join(base, "f"), changeset.ObjectPath(objects, fileResult("shared").Digest)))
		r := checkSharedInode(root, set, staged, objects)
		if r == nil || r.Kind != SharedInode || !slices.Equal(r.Paths, []string{"f"}) {
			t.Fatalf("refusal %v, want SharedInode for f", r)
		}
	})
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "state"))
	must(t, err)
	return s
}

func TestCheckProtected(t *testing.T) {
	base := newBaseDir(t, map[string]string{"src/main.go": "package main\n", ".github/workflows/ci.yml": "on: push\n"})
	changes := []changeset.Change{
		{Path: ".envrc", Op: changeset.Add, Result: fileResult("export X=1")},
		{Path: ".github/workflows", Op: changeset.Delete, Base: manifest.Entry{Kind: manifest.KindDir, Mode: 0o755}},
		{Path: ".github/workflows/ci.yml", Op: changeset.Delete, Base: fileResult("on: push\n")},
		{Path: ".vscode/tasks.json", Op: changeset.Add, Result: fileResult("{}")},
		{Path: "secrets/key", Op: changeset.Add, Result: fileResult("k")},
		{Path: "src/.airlock.toml", Op: changeset.Add, Result: fileResult("")},
		{Path: "src/main.go", Op: changeset.Modify, Result: fileResult("package main // edited\n")},
	}
	set := &changeset.Set{Changes: changes}
	defaults := []string{".envrc", ".github/workflows", ".github/workflows/ci.yml", ".vscode/tasks.json", "src/.airlock.toml"}
	user, agent := CommitOptions{Approve: true}, CommitOptions{Approve: true, AgentApproval: true}
	tests := []struct {
		name   string
		cfg    string // the project's .airlock.toml, "" for none
		opts   OpenOptions
		settle CommitOptions
		want   []string
		remedy RemedyKind
	}{
		{"defaults", "", OpenOptions{}, CommitOptions{}, defaults, RemedyApprove},
		{"defaults approved", "", OpenOptions{}, user, nil, ""},
		{"--protect adds", "", OpenOptions{Protect: []string{"secrets/"}}, CommitOptions{}, []string{".envrc", ".github/workflows", ".github/workflows/ci.yml", ".vscode/tasks.json", "secrets/key", "src/.airlock.toml"}, RemedyApprove},
		// Open flags shape only the transaction's own list: the project's
		// protection, the defaults included, is held at every commit (an
		// agent can pass flags too).
		{"--no-default-protect keeps the project's", "", OpenOptions{NoDefaultProtect: true, Protect: []string{"/src/*.go"}}, CommitOptions{}, []string{".envrc", ".github/workflows", ".github/workflows/ci.yml", ".vscode/tasks.json", "src/.airlock.toml", "src/main.go"}, RemedyApprove},
		{"negation keeps the project's", "", OpenOptions{Protect: []string{"!.envrc", "!.airlock.toml", "!.github/workflows/"}}, CommitOptions{}, defaults, RemedyApprove},
		// The project itself may drop them.
		{"config drops the defaults", "default_protect = false\n", OpenOptions{NoDefaultProtect: true, Protect: []string{"src/*", "!src/main.go"}}, CommitOptions{}, []string{"src/.airlock.toml"}, RemedyApprove},
		// An agent's own approval is no approval, unless the project says
		// its agents may approve; the remedy then is a person's.
		{"an agent's approval", "", OpenOptions{}, agent, defaults, RemedyUserApprove},
		{"an agent without approval", "", OpenOptions{}, CommitOptions{AgentApproval: true}, defaults, RemedyUserApprove},
		{"an agent's approval, agents_approve = false", "agents_approve = false\n", OpenOptions{}, agent, defaults, RemedyUserApprove},
		{"an agent's approval, agents_approve = true", "agents_approve = true\n", OpenOptions{}, agent, nil, ""},
		{"agents_approve = true approves nothing by itself", "agents_approve = true\n", OpenOptions{}, CommitOptions{AgentApproval: true}, defaults, RemedyUserApprove},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(base, ".airlock.toml")
			if tt.cfg != "" {
				must(t, os.WriteFile(cfg, []byte(tt.cfg), 0o644))
				defer os.Remove(cfg)
			}
			s := newStore(t)
			o := tt.opts
			o.Base, o.Backend = base, "auto"
			tx, err := s.Open(context.Background(), o)
			must(t, err)
			gate, err := tx.projectNow(&workspace{base: tx.Base()})
			must(t, err)
			r, err := tx.checkProtected(set, tt.settle, gate)
			must(t, err)
			if tt.want == nil {
				if r != nil {
					t.Fatalf("refused: %v", r)
				}
				return
			}
			if r == nil {
				t.Fatalf("no refusal, want %q", tt.want)
			}
			if r.Kind != ProtectedPathNotApproved || !slices.Equal(r.Paths, tt.want) {
				t.Errorf("refusal %s %q, want ProtectedPathNotApproved %q", r.Kind, r.Paths, tt.want)
			}
			if r.Remedy.Kind != tt.remedy || r.Remedy.Tx != tx.ID() {
				t.Errorf("remedy %+v, want %s for %s", r.Remedy, tt.remedy, tx.ID())
			}
		})
	}
}

// txDirs lists the transactions a store holds on disk.
func txDirs(t *testing.T, s *Store) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(s.Dir(), "tx"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	must(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestOpenPreconditions(t *testing.T) {
	ctx := context.Background()
	t.Run("base is a file", func(t *testing.T) {
		s := newStore(t)
		f := filepath.Join(t.TempDir(), "file")
		must(t, os.WriteFile(f, nil, 0o644))
		_, err := s.Open(ctx, OpenOptions{Base: f})
		if err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("Open of a file: %v", err)
		}
		if d := txDirs(t, s); len(d) != 0 {
			t.Errorf("state left behind: %q", d)
		}
	})
	t.Run("base missing", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Open(ctx, OpenOptions{Base: filepath.Join(t.TempDir(), "nope")}); err == nil {
			t.Fatal("Open of a missing base succeeded")
		}
	})
	t.Run("filesystem root", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Open(ctx, OpenOptions{Base: "/"})
		if err == nil || !strings.Contains(err.Error(), "root") {
			t.Fatalf("Open of /: %v", err)
		}
		if d := txDirs(t, s); len(d) != 0 {
			t.Errorf("state left behind: %q", d)
		}
	})
	t.Run("home directory", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("HOME", home)
		s := newStore(t)
		for _, b := range []string{home, home + "/.", home + "/sub/.."} {
			if b == home+"/sub/.." {
				must(t, os.MkdirAll(filepath.Join(home, "sub"), 0o755))
			}
			_, err := s.Open(ctx, OpenOptions{Base: b})
			if err == nil || !strings.Contains(err.Error(), "home") {
				t.Errorf("Open of $HOME as %s: %v", b, err)
			}
		}
	})
	t.Run("home through a symlink", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("HOME", home)
		s := newStore(t)
		l := filepath.Join(t.TempDir(), "h")
		must(t, os.Symlink(home, l))
		if _, err := s.Open(ctx, OpenOptions{Base: l}); err == nil {
			t.Fatal("Open of a symlink to $HOME succeeded")
		}
	})
	t.Run("state root inside the base", func(t *testing.T) {
		base := newBaseDir(t, map[string]string{"a": "a"})
		s, err := OpenStore(filepath.Join(base, ".state"))
		must(t, err)
		_, err = s.Open(ctx, OpenOptions{Base: base})
		if err == nil || !strings.Contains(err.Error(), "contain one another") {
			t.Fatalf("Open with the state root inside the base: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(base, ".state")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the state root was created inside the base: %v", err)
		}
	})
	t.Run("base inside the state root", func(t *testing.T) {
		s := newStore(t)
		must(t, os.MkdirAll(filepath.Join(s.Dir(), "proj"), 0o755))
		_, err := s.Open(ctx, OpenOptions{Base: filepath.Join(s.Dir(), "proj")})
		if err == nil || !strings.Contains(err.Error(), "contain one another") {
			t.Fatalf("Open of a base inside the state root: %v", err)
		}
	})
	t.Run("base is the state root", func(t *testing.T) {
		s := newStore(t)
		must(t, os.MkdirAll(s.Dir(), 0o700))
		if _, err := s.Open(ctx, OpenOptions{Base: s.Dir()}); err == nil {
			t.Fatal("Open of the state root itself succeeded")
		}
	})
	t.Run("bad ids", func(t *testing.T) {
		base := newBaseDir(t, map[string]string{"a": "a"})
		s := newStore(t)
		for _, id := range []string{"../x", "a/b", ".", "..", strings.Repeat("a", 65), "sp ace", "é", "a\x00b", "-\n"} {
			if _, err := s.Open(ctx, OpenOptions{Base: base, ID: id}); err == nil {
				t.Errorf("Open accepted id %q", id)
			}
		}
		if d := txDirs(t, s); len(d) != 0 {
			t.Errorf("state left behind: %q", d)
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(s.Dir()), "x")); err == nil {
			t.Error("an id escaped the state root")
		}
	})
	t.Run("duplicate id", func(t *testing.T) {
		base := newBaseDir(t, map[string]string{"a": "a"})
		s := newStore(t)
		first, err := s.Open(ctx, OpenOptions{Base: base, ID: "same.id_1", Backend: "auto"})
		must(t, err)
		if _, err := s.Open(ctx, OpenOptions{Base: base, ID: "same.id_1", Backend: "auto"}); err == nil {
			t.Fatal("a second Open with the same id succeeded")
		}
		// The first transaction is intact.
		if _, err := os.Stat(filepath.Join(first.Path(), "a")); err != nil {
			t.Errorf("the first transaction's staged workspace was disturbed: %v", err)
		}
		again, err := s.Tx("same.id_1")
		must(t, err)
		if st, err := again.Status(); err != nil || st != StatusOpen {
			t.Errorf("first transaction status %v, %v", st, err)
		}
	})
}

// TestOpenZeroOptions: OpenOptions documents Backend "" as allowed (the
// default), and a harness that sets only Base must get a transaction.
func TestOpenZeroOptions(t *testing.T) {
	base := newBaseDir(t, map[string]string{"a": "a"})
	tx, err := newStore(t).Open(context.Background(), OpenOptions{Base: base})
	if err != nil {
		t.Fatalf("Open with only Base set: %v", err)
	}
	if tx.Record().Backend != "copy" {
		t.Errorf("backend %q, want copy (what auto picks)", tx.Record().Backend)
	}
}

// pathsDigest is the receipt rule computed from scratch: the tree digest
// of what dir holds at paths (absent paths count as kind none).
func pathsDigest(t *testing.T, dir string, paths []string) string {
	t.Helper()
	sort.Strings(paths)
	var es []manifest.Entry
	for _, p := range paths {
		e, err := manifest.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			e = manifest.Entry{}
		} else {
			must(t, err)
		}
		e.Path = p
		if e.Kind == manifest.KindFile {
			e.Digest, err = manifest.HashFile(filepath.Join(dir, filepath.FromSlash(p)))
			must(t, err)
		}
		es = append(es, e)
	}
	d, err := manifest.TreeDigest(es, func(e *manifest.Entry) (string, error) { return e.Digest, nil })
	must(t, err)
	return d
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

// TestCommitRoundTrip is what a harness does: open, write in the staged
// workspace, commit, read the receipt; then commit again.
func TestCommitRoundTrip(t *testing.T) {
	ctx := context.Background()
	base := newBaseDir(t, map[string]string{"src/main.go": "package main\n", "TODO": "todo\n", "keep": "keep\n", "link": "->keep"})
	s := newStore(t)
	tx, err := s.Open(ctx, OpenOptions{Base: base, ID: "round-trip", Backend: "auto", Command: []string{"agent", "--flag"}})
	must(t, err)
	if tx.ID() != "round-trip" || tx.Base() != base {
		t.Fatalf("tx %s over %s", tx.ID(), tx.Base())
	}
	// The harness writes through the staged path; the base is untouched.
	writeTree(t, tx.Path(), map[string]string{"src/helper.go": "package main\n\nfunc helper() {}\n", "newlink": "->src"})
	must(t, os.WriteFile(filepath.Join(tx.Path(), "src", "main.go"), []byte("package main // edited\n"), 0o644))
	must(t, os.Remove(filepath.Join(tx.Path(), "TODO")))
	if _, err := os.Lstat(filepath.Join(base, "src", "helper.go")); err == nil {
		t.Fatal("a staged write reached the base before commit")
	}

	cs, err := tx.Changes(ctx)
	must(t, err)
	var names []string
	for _, c := range cs.Changes() {
		names = append(names, c.Op+" "+c.Path)
	}
	wantNames := []string{"delete TODO", "add newlink", "add src/helper.go", "modify src/main.go"}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("changes %q, want %q", names, wantNames)
	}
	changed := []string{"TODO", "newlink", "src/helper.go", "src/main.go"}
	beforeDigest := pathsDigest(t, base, changed)

	res, err := tx.Commit(ctx, CommitOptions{})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if res.Outcome != Committed || res.Repeat || res.Added != 2 || res.Modified != 1 || res.Deleted != 1 {
		t.Fatalf("result %+v", res)
	}
	if got := readFile(t, filepath.Join(base, "src", "main.go")); got != "package main // edited\n" {
		t.Errorf("src/main.go = %q", got)
	}
	if got := readFile(t, filepath.Join(base, "src", "helper.go")); !strings.Contains(got, "helper") {
		t.Errorf("src/helper.go = %q", got)
	}
	if tgt, err := os.Readlink(filepath.Join(base, "newlink")); err != nil || tgt != "src" {
		t.Errorf("newlink -> %q, %v", tgt, err)
	}
	if _, err := os.Lstat(filepath.Join(base, "TODO")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("TODO survived: %v", err)
	}
	if got := readFile(t, filepath.Join(base, "keep")); got != "keep\n" {
		t.Errorf("keep = %q", got)
	}
	if _, err := os.Lstat(tx.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("staged workspace kept after commit: %v", err)
	}
	if st, err := tx.Status(); err != nil || st != StatusCommitted {
		t.Errorf("status %v, %v", st, err)
	}

	// The receipt: sealed, on disk, and true to the base.
	data, err := os.ReadFile(res.ReceiptPath)
	must(t, err)
	rc, err := receipt.Verify(data)
	if err != nil {
		t.Fatalf("receipt does not verify: %v", err)
	}
	if rc.TxID != "round-trip" || rc.Outcome != "committed" || string(rc.Base) != base || rc.Added != 2 || rc.Modified != 1 || rc.Deleted != 1 {
		t.Errorf("receipt %+v", rc)
	}
	if len(rc.Command) != 2 || rc.Command[0] != "agent" {
		t.Errorf("receipt command %q", rc.Command)
	}
	if rc.BaseDigest != beforeDigest {
		t.Errorf("receipt base_digest %s, the base before held %s", rc.BaseDigest, beforeDigest)
	}
	if after := pathsDigest(t, base, changed); rc.ResultDigest != after {
		t.Errorf("receipt result_digest %s, the base now holds %s", rc.ResultDigest, after)
	}
	if rc.Digest != res.Receipt.Digest {
		t.Errorf("receipt on disk %s, in the result %s", rc.Digest, res.Receipt.Digest)
	}
	if !slices.Equal(rc.NotTransactional, NotTransactional) {
		t.Errorf("not_transactional %q", rc.NotTransactional)
	}

	// Commit again: the first outcome, nothing changed.
	snapBefore := pathsDigest(t, base, []string{"TODO", "keep", "link", "newlink", "src", "src/helper.go", "src/main.go"})
	again, err := tx.Commit(ctx, CommitOptions{})
	if err != nil {
		t.Fatalf("second Commit: %v", err)
	}
	if !again.Repeat || again.Outcome != Committed || again.Receipt == nil || again.Receipt.Digest != rc.Digest {
		t.Fatalf("second Commit %+v, want Repeat with the first receipt", again)
	}
	if again.Added != 2 || again.Modified != 1 || again.Deleted != 1 {
		t.Errorf("second Commit counts %d %d %d", again.Added, again.Modified, again.Deleted)
	}
	if pathsDigest(t, base, []string{"TODO", "keep", "link", "newlink", "src", "src/helper.go", "src/main.go"}) != snapBefore {
		t.Error("the second Commit changed the base")
	}
	// Loaded afresh, as another process would.
	tx2, err := s.Tx("round-trip")
	must(t, err)
	third, err := tx2.Commit(ctx, CommitOptions{})
	if err != nil || !third.Repeat || third.Outcome != Committed {
		t.Fatalf("Commit from a reloaded tx: %+v, %v", third, err)
	}
}

// TestReceiptDigestMatchesRestoreProof: surface.go says a receipt's
// base_digest is the digest recover proves a rollback with. The change set
// here adds a path, which the base did not hold before.
func TestReceiptDigestMatchesRestoreProof(t *testing.T) {
	ctx := context.Background()
	base := newBaseDir(t, map[string]string{"mod.txt": "old"})
	root := openRoot(t, base)
	objects := t.TempDir()
	newC, modC := "added", "new"
	for _, c := range []string{newC, modC} {
		must(t, os.WriteFile(changeset.ObjectPath(objects, manifest.HashBytes([]byte(c))), []byte(c), 0o600))
	}
	ops := []journal.Op{
		{Path: "add.txt", Before: measured(t, root, "add.txt"), After: fileResult(newC)},
		{Path: "mod.txt", Before: measured(t, root, "mod.txt"), After: fileResult(modC)},
	}
	jdir := filepath.Join(t.TempDir(), "journal")
	j, err := journal.Prepare(ctx, root, jdir, "tx", ops)
	must(t, err)
	before, _, err := opsDigests(j.Ops)
	must(t, err)
	if want := pathsDigest(t, base, []string{"add.txt", "mod.txt"}); before != want {
		t.Errorf("commit base_digest %s, the base holds %s", before, want)
	}
	_, err = journal.Apply(ctx, root, j, objects)
	must(t, err)
	rr, err := journal.Restore(ctx, root, j, jdir)
	must(t, err)
	if rr.Digest != before {
		t.Errorf("recover proves the rollback with %s, but the commit recorded base_digest %s for the same paths", rr.Digest, before)
	}
}

// TestCommitRefusedThenApproved: a refusal is an error a harness can
// errors.As, leaves the base as it was, keeps the transaction, and the
// same transaction commits once approved.
func TestCommitRefusedThenApproved(t *testing.T) {
	ctx := context.Background()
	base := newBaseDir(t, map[string]string{"a": "a"})
	s := newStore(t)
	tx, err := s.Open(ctx, OpenOptions{Base: base, Backend: "auto"})
	must(t, err)
	writeTree(t, tx.Path(), map[string]string{".envrc": "export X=1\n", "b": "b"})
	res, err := tx.Commit(ctx, CommitOptions{})
	var r *Refusal
	if !errors.As(err, &r) || r.Kind != ProtectedPathNotApproved || !slices.Equal(r.Paths, []string{".envrc"}) {
		t.Fatalf("Commit error %v, want a ProtectedPathNotApproved refusal naming .envrc", err)
	}
	if res == nil || res.Outcome != Refused || res.Receipt == nil || res.Receipt.Refusal != string(ProtectedPathNotApproved) {
		t.Fatalf("refused result %+v", res)
	}
	for _, p := range []string{".envrc", "b"} {
		if _, err := os.Lstat(filepath.Join(base, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s reached the base through a refused commit: %v", p, err)
		}
	}
	if st, _ := tx.Status(); st != StatusRefused {
		t.Errorf("status %v, want refused", st)
	}
	if _, err := os.Stat(filepath.Join(tx.Path(), ".envrc")); err != nil {
		t.Errorf("the refused transaction's staged workspace is gone: %v", err)
	}
	res, err = tx.Commit(ctx, CommitOptions{Approve: true})
	if err != nil || res.Outcome != Committed || !res.Receipt.Approved {
		t.Fatalf("approved Commit: %+v, %v", res, err)
	}
	if got := readFile(t, filepath.Join(base, ".envrc")); got != "export X=1\n" {
		t.Errorf(".envrc = %q", got)
	}
}
