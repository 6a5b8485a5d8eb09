package airlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/testbin"
)

// The project config through the Go API: what .airlock.toml in the base
// changes about a transaction, and what a .airlock.toml the agent writes
// does not.

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// wantStaged checks which of paths the staged workspace holds.
func wantStaged(t *testing.T, tx *Tx, present, absent []string) {
	t.Helper()
	for _, p := range present {
		if !exists(filepath.Join(tx.Path(), filepath.FromSlash(p))) {
			t.Errorf("%s is not staged, want it staged", p)
		}
	}
	for _, p := range absent {
		if exists(filepath.Join(tx.Path(), filepath.FromSlash(p))) {
			t.Errorf("%s is staged, want it excluded", p)
		}
	}
}

func wantRefusal(t *testing.T, err error, kind RefusalKind) *Refusal {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) || r.Kind != kind {
		t.Fatalf("commit: %v, want a %s refusal", err, kind)
	}
	return r
}

func TestConfigExcludes(t *testing.T) {
	noise := map[string]string{
		".aider.chat.history.md": "chat", ".claude/settings.local.json": "{}", ".claude/worktrees/w/f": "w",
	}
	files := map[string]string{"keep.txt": "k", "node_modules/m.js": "m", "a.log": "a", "b.log": "b"}
	for k, v := range noise {
		files[k] = v
	}
	tests := []struct {
		name           string
		config         string
		flags          []string
		present, absen []string
	}{
		{"no config: the default excludes only", "", nil,
			[]string{"keep.txt", "node_modules/m.js", "a.log", ".claude"}, []string{".aider.chat.history.md", ".claude/settings.local.json", ".claude/worktrees"}},
		{"config excludes add to the defaults", "exclude = [\"node_modules/\", \"*.log\"]\n", nil,
			[]string{"keep.txt", ".claude"}, []string{"node_modules", "a.log", "b.log", ".aider.chat.history.md", ".claude/worktrees"}},
		{"a flag re-includes what the config excludes", "exclude = [\"*.log\"]\n", []string{"!b.log"},
			[]string{"b.log"}, []string{"a.log"}},
		{"default_excludes = false stages agent noise", "default_excludes = false\n", nil,
			[]string{".aider.chat.history.md", ".claude/settings.local.json", ".claude/worktrees/w/f"}, nil},
		{"default_excludes = false keeps the config's own", "default_excludes = false\nexclude = [\"a.log\"]\n", nil,
			[]string{".aider.chat.history.md", "b.log"}, []string{"a.log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := newBaseDir(t, files)
			if tt.config != "" {
				writeTree(t, base, map[string]string{config.FileName: tt.config})
			}
			tx, err := newStore(t).Open(context.Background(), OpenOptions{Base: base, Exclude: tt.flags})
			must(t, err)
			wantStaged(t, tx, tt.present, tt.absen)
			// What was excluded is recorded: the diff and the commit use the
			// record, not the config as it is later.
			for _, sel := range tt.flags {
				if !slices.Contains(tx.Record().Exclude, sel) {
					t.Errorf("record's excludes %q lack the flag's %q", tx.Record().Exclude, sel)
				}
			}
			// Not staged is not deleted: the change set is the command's.
			writeTree(t, tx.Path(), map[string]string{"new.txt": "n"})
			cs, err := tx.Changes(context.Background())
			must(t, err)
			if ch := cs.Changes(); len(ch) != 1 || ch[0].Path != "new.txt" || ch[0].Op != "add" {
				t.Errorf("change set %+v, want only new.txt added", ch)
			}
			res, err := tx.Commit(context.Background(), CommitOptions{})
			must(t, err)
			if res.Outcome != Committed || res.Added != 1 {
				t.Errorf("commit: %s, %d added", res.Outcome, res.Added)
			}
			for p, content := range files {
				if readFile(t, filepath.Join(base, p)) != content {
					t.Errorf("the commit changed %s in the base", p)
				}
			}
		})
	}
}

func TestConfigProtect(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		change  string
		refused bool
	}{
		{"config protect refuses", "protect = [\"secrets/**\"]\n", "secrets/key", true},
		{"defaults still protect", "protect = [\"secrets/**\"]\n", ".envrc", true},
		{"default_protect = false drops the defaults", "default_protect = false\n", ".envrc", false},
		{"default_protect = false keeps the config's own", "default_protect = false\nprotect = [\"secrets/\"]\n", "secrets/key", true},
		{"unprotected path commits", "protect = [\"secrets/**\"]\n", "src/main.go", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := newBaseDir(t, map[string]string{config.FileName: tt.config, "secrets/.keep": ""})
			tx, err := newStore(t).Open(context.Background(), OpenOptions{Base: base})
			must(t, err)
			writeTree(t, tx.Path(), map[string]string{tt.change: "x"})
			_, err = tx.Commit(context.Background(), CommitOptions{})
			if !tt.refused {
				must(t, err)
				if readFile(t, filepath.Join(base, tt.change)) != "x" {
					t.Errorf("%s did not land", tt.change)
				}
				return
			}
			r := wantRefusal(t, err, ProtectedPathNotApproved)
			if !slices.Equal(r.Paths, []string{tt.change}) {
				t.Errorf("refusal names %q, want %q", r.Paths, tt.change)
			}
			if exists(filepath.Join(base, tt.change)) {
				t.Errorf("%s landed although refused", tt.change)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ctx := context.Background()
	// The validator refuses a candidate holding "bad"; it runs in the
	// candidate tree, so what it sees is base + change set.
	cfg := "validate = \"test ! -e bad\"\n"
	open := func(t *testing.T) (string, *Tx) {
		t.Helper()
		base := newBaseDir(t, map[string]string{config.FileName: cfg, "f": "f"})
		tx, err := newStore(t).Open(ctx, OpenOptions{Base: base})
		must(t, err)
		if tx.Record().Validate != "test ! -e bad" {
			t.Fatalf("record's validate %q, want the config's", tx.Record().Validate)
		}
		writeTree(t, tx.Path(), map[string]string{"bad": "b"})
		return base, tx
	}

	t.Run("the config's validate refuses", func(t *testing.T) {
		base, tx := open(t)
		_, err := tx.Commit(ctx, CommitOptions{})
		wantRefusal(t, err, ValidationFailed)
		if exists(filepath.Join(base, "bad")) {
			t.Error("bad landed although validation failed")
		}
	})
	// The caller adds a validator; it never replaces or drops the
	// project's (SPEC.md amendments: a gate no caller lowers).
	for _, add := range []string{"", "true", "test -e bad", "   "} {
		t.Run(fmt.Sprintf("validate %q does not lower the gate", add), func(t *testing.T) {
			base, tx := open(t)
			res, err := tx.Commit(ctx, CommitOptions{Validate: add})
			r := wantRefusal(t, err, ValidationFailed)
			if exists(filepath.Join(base, "bad")) {
				t.Fatal("bad landed although the project's validation failed")
			}
			if !strings.Contains(r.Reason, "project's validator `test ! -e bad`") {
				t.Errorf("reason %q does not name the project's validator", r.Reason)
			}
			// The project's failed first: the added one never ran.
			if !slices.Equal(res.Validators, []string{"test ! -e bad"}) || len(res.Receipt.Validators) != 1 {
				t.Errorf("validators %q, receipt %q: want only the project's", res.Validators, res.Receipt.Validators)
			}
			if st, _ := tx.Status(); st != StatusRefused {
				t.Errorf("status %s, want refused", st)
			}
		})
	}
	t.Run("an added validator runs after the project's", func(t *testing.T) {
		// The project's validator leaves a mark in the candidate; the
		// added one sees it, so it ran second, on the same candidate.
		base := newBaseDir(t, map[string]string{config.FileName: "validate = \"touch project-ran\"\n", "f": "f"})
		tx, err := newStore(t).Open(ctx, OpenOptions{Base: base})
		must(t, err)
		writeTree(t, tx.Path(), map[string]string{"good": "g"})
		res, err := tx.Commit(ctx, CommitOptions{Validate: "test ! -e good"})
		r := wantRefusal(t, err, ValidationFailed)
		if !strings.Contains(r.Reason, "added validator `test ! -e good`") {
			t.Errorf("reason %q does not name the added validator", r.Reason)
		}
		if !slices.Equal(res.Validators, []string{"touch project-ran", "test ! -e good"}) {
			t.Errorf("validators %q, want the project's then the added one", res.Validators)
		}
		if exists(filepath.Join(base, "good")) || exists(filepath.Join(base, "project-ran")) {
			t.Error("a refused commit or a validator wrote to the base")
		}
		added := "test -e good && test -e project-ran"
		res, err = tx.Commit(ctx, CommitOptions{Validate: added})
		must(t, err)
		if res.Outcome != Committed || !exists(filepath.Join(base, "good")) || exists(filepath.Join(base, "project-ran")) {
			t.Errorf("commit with both validators passing: %s", res.Outcome)
		}
		want := []string{"touch project-ran", added}
		if !slices.Equal(res.Receipt.Validators, want) {
			t.Errorf("receipt validators %q, want %q", res.Receipt.Validators, want)
		}
	})
	t.Run("a passing change commits", func(t *testing.T) {
		base, tx := open(t)
		must(t, os.Remove(filepath.Join(tx.Path(), "bad")))
		writeTree(t, tx.Path(), map[string]string{"good": "g"})
		res, err := tx.Commit(ctx, CommitOptions{})
		must(t, err)
		if res.Outcome != Committed || readFile(t, filepath.Join(base, "good")) != "g" {
			t.Errorf("commit: %s", res.Outcome)
		}
	})
	t.Run("the validate recorded at open is the one used", func(t *testing.T) {
		base, tx := open(t)
		// The base's config changes after open (a person edits it): the
		// transaction keeps the rules it opened under.
		must(t, os.WriteFile(filepath.Join(base, config.FileName), []byte("validate = \"true\"\n"), 0o644))
		_, err := tx.Commit(ctx, CommitOptions{})
		wantRefusal(t, err, ValidationFailed)
	})
	t.Run("land uses each transaction's validate", func(t *testing.T) {
		base, tx := open(t)
		s := tx.store
		tx2, err := s.Open(ctx, OpenOptions{Base: base})
		must(t, err)
		writeTree(t, tx2.Path(), map[string]string{"fine": "ok"})
		got := s.Land(ctx, []string{tx.ID(), tx2.ID()}, CommitOptions{})
		wantRefusal(t, got[0].Err, ValidationFailed)
		must(t, got[1].Err)
		if !exists(filepath.Join(base, "fine")) || exists(filepath.Join(base, "bad")) {
			t.Error("land did not apply exactly the transaction that passed validation")
		}
	})
}

func TestConfigBackend(t *testing.T) {
	ctx := context.Background()
	overlayOK, overlayWhy := false, ""
	if b, err := stage.Get(stage.Overlay); err == nil {
		s := newStore(t)
		must(t, os.MkdirAll(s.Dir(), 0o700))
		overlayOK, overlayWhy = b.Supported(s.Dir())
	} else {
		overlayWhy = err.Error()
	}
	tests := []struct {
		name, config, flag, want string
		needOverlay              bool
		err                      string
	}{
		{"config backend used when the flag is empty", "backend = \"overlay\"\n", "", "overlay", true, ""},
		{"config backend used when the flag is auto", "backend = \"overlay\"\n", "auto", "overlay", true, ""},
		{"a flag other than auto wins", "backend = \"overlay\"\n", "copy", "copy", false, ""},
		{"config copy", "backend = \"copy\"\n", "", "copy", false, ""},
		{"config auto is auto", "backend = \"auto\"\n", "", "copy", false, ""},
		{"an unavailable config backend names the config", "backend = \"worktree\"\n", "", "", false, "from "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needOverlay && !overlayOK {
				testbin.Missing(t, "overlay is not supported here: %s", overlayWhy)
			}
			base := newBaseDir(t, map[string]string{config.FileName: tt.config, "f": "f"})
			tx, err := newStore(t).Open(ctx, OpenOptions{Base: base, Backend: tt.flag})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err+filepath.Join(base, config.FileName)) {
					t.Fatalf("Open: %v, want an error naming %s", err, filepath.Join(base, config.FileName))
				}
				return
			}
			must(t, err)
			defer tx.Discard(ctx, DiscardOptions{})
			if tx.Record().Backend != tt.want {
				t.Errorf("backend %q, want %q", tx.Record().Backend, tt.want)
			}
		})
	}
}

func TestConfigInStagedTreeIgnored(t *testing.T) {
	ctx := context.Background()
	base := newBaseDir(t, map[string]string{"f": "f", ".aider.tags": "t"})
	s := newStore(t)
	tx, err := s.Open(ctx, OpenOptions{Base: base})
	must(t, err)
	// The agent writes a config that would exclude f, turn off
	// the default excludes and protection, and refuse every commit.
	agentCfg := "validate = \"exit 1\"\ndefault_excludes = false\ndefault_protect = false\nexclude = [\"f\"]\n[hooks]\nstop = \"off\"\n"
	writeTree(t, tx.Path(), map[string]string{config.FileName: agentCfg, "g": "g"})
	cs, err := tx.Changes(ctx)
	must(t, err)
	if a, _, _ := cs.Counts(); a != 2 {
		t.Errorf("change set %+v, want .airlock.toml and g added (the staged config excludes nothing yet)", cs.Changes())
	}
	// .airlock.toml is protected by default: it changes airlock's rules.
	_, err = tx.Commit(ctx, CommitOptions{})
	r := wantRefusal(t, err, ProtectedPathNotApproved)
	if !slices.Equal(r.Paths, []string{config.FileName}) {
		t.Errorf("refusal names %q, want %q", r.Paths, config.FileName)
	}
	// Approved, it lands as content; its validate did not run for the
	// transaction that wrote it.
	res, err := tx.Commit(ctx, CommitOptions{Approve: true})
	must(t, err)
	if res.Outcome != Committed {
		t.Fatalf("outcome %s", res.Outcome)
	}
	// The next transaction opens under it.
	tx2, err := s.Open(ctx, OpenOptions{Base: base})
	must(t, err)
	rec := tx2.Record()
	if rec.Validate != "exit 1" || rec.StopHook != "off" || rec.Config != filepath.Join(base, config.FileName) {
		t.Errorf("record after the config landed: validate %q stop %q config %q", rec.Validate, rec.StopHook, rec.Config)
	}
	wantStaged(t, tx2, []string{".aider.tags", "g"}, []string{"f"})
}

func TestConfigRecorded(t *testing.T) {
	ctx := context.Background()
	tx, err := newStore(t).Open(ctx, OpenOptions{Base: newBaseDir(t, map[string]string{"f": "f"})})
	must(t, err)
	if rec := tx.Record(); rec.Config != "" || rec.Validate != "" || rec.StopHook != string(config.StopCheck) {
		t.Errorf("record without a config: config %q validate %q stop %q", rec.Config, rec.Validate, rec.StopHook)
	}
	base := newBaseDir(t, map[string]string{config.FileName: "validate = \"make test\"\n[hooks]\nstop = \"commit\"\n"})
	tx, err = newStore(t).Open(ctx, OpenOptions{Base: base})
	must(t, err)
	if rec := tx.Record(); rec.Validate != "make test" || rec.StopHook != "commit" {
		t.Errorf("record: validate %q stop %q", rec.Validate, rec.StopHook)
	}
	// NoConfig skips the file altogether.
	tx, err = newStore(t).Open(ctx, OpenOptions{Base: base, NoConfig: true})
	must(t, err)
	if rec := tx.Record(); rec.Validate != "" || rec.Config != "" {
		t.Errorf("record with NoConfig: validate %q config %q", rec.Validate, rec.Config)
	}
}

func TestConfigMalformedRefusesOpen(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, base string)
		want string
	}{
		{"malformed", func(t *testing.T, base string) {
			writeTree(t, base, map[string]string{config.FileName: "backend = \"copy\"\nvalidate = [\n"})
		}, ":2: key \"validate\""},
		{"unknown key", func(t *testing.T, base string) {
			writeTree(t, base, map[string]string{config.FileName: "[hooks]\nstopp = \"off\"\n"})
		}, ":2: key \"hooks.stopp\": unknown key"},
		{"symlink", func(t *testing.T, base string) {
			outside := filepath.Join(t.TempDir(), "cfg.toml")
			must(t, os.WriteFile(outside, []byte("default_protect = false\n"), 0o644))
			must(t, os.Symlink(outside, filepath.Join(base, config.FileName)))
		}, ": is a symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := newBaseDir(t, map[string]string{"f": "f"})
			tt.make(t, base)
			s := newStore(t)
			tx, err := s.Open(context.Background(), OpenOptions{Base: base})
			if err == nil {
				t.Fatalf("Open accepted it: %s", tx.ID())
			}
			var ce *config.Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Join(base, config.FileName)+tt.want) {
				t.Errorf("Open: %v, want a config error with %q", err, filepath.Join(base, config.FileName)+tt.want)
			}
			if d := txDirs(t, s); len(d) > 0 {
				t.Errorf("a failed open left transactions behind: %q", d)
			}
		})
	}
}

// TestUndoIgnoresConfig: undo replays the selectors of the transaction it
// reverts, so a config broken since cannot block it.
func TestUndoIgnoresConfig(t *testing.T) {
	ctx := context.Background()
	base := newBaseDir(t, map[string]string{"f": "f"})
	s := newStore(t)
	tx, err := s.Open(ctx, OpenOptions{Base: base})
	must(t, err)
	writeTree(t, tx.Path(), map[string]string{"g": "g"})
	_, err = tx.Commit(ctx, CommitOptions{})
	must(t, err)
	writeTree(t, base, map[string]string{config.FileName: "not toml ["})
	if _, err := s.Open(ctx, OpenOptions{Base: base}); err == nil {
		t.Fatal("open over a malformed config succeeded")
	}
	res, err := s.Undo(ctx, UndoOptions{Base: base, ID: tx.ID()})
	must(t, err)
	if res.Outcome != Committed || exists(filepath.Join(base, "g")) {
		t.Errorf("undo: %s; g still there: %v", res.Outcome, exists(filepath.Join(base, "g")))
	}
}

// TestUndoRunsProjectValidate: an undo is a commit like any other, so the
// project's validate is its gate too: it runs on the undo's candidate and
// refuses a revert that fails it. Where the config no longer parses, the
// validate the reverted transaction ran under stands in.
func TestUndoRunsProjectValidate(t *testing.T) {
	ctx := context.Background()
	cfg := "validate = \"test -e keep\"\n"
	setup := func(t *testing.T) (*Store, string, *Tx) {
		t.Helper()
		base := newBaseDir(t, map[string]string{config.FileName: cfg, "f": "f"})
		s := newStore(t)
		tx, err := s.Open(ctx, OpenOptions{Base: base})
		must(t, err)
		writeTree(t, tx.Path(), map[string]string{"keep": "k"})
		res, err := tx.Commit(ctx, CommitOptions{})
		must(t, err)
		if res.Outcome != Committed {
			t.Fatalf("commit: %s", res.Outcome)
		}
		return s, base, tx
	}
	for _, tc := range []struct{ name, config string }{
		{"the base's config", cfg},
		{"a malformed config: the reverted transaction's", "not toml ["},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, base, tx := setup(t)
			writeTree(t, base, map[string]string{config.FileName: tc.config})
			res, err := s.Undo(ctx, UndoOptions{Base: base, ID: tx.ID()})
			wantRefusal(t, err, ValidationFailed)
			if !exists(filepath.Join(base, "keep")) {
				t.Error("the undo landed although the project's validation failed")
			}
			if res == nil || !slices.Equal(res.Validators, []string{"test -e keep"}) {
				t.Errorf("undo result %+v, want the project's validate to have run", res)
			}
		})
	}
	t.Run("a config that dropped validate", func(t *testing.T) {
		// A person changed the rules in the base: the undo follows them.
		s, base, tx := setup(t)
		writeTree(t, base, map[string]string{config.FileName: "exclude = [\"*.log\"]\n"})
		res, err := s.Undo(ctx, UndoOptions{Base: base, ID: tx.ID()})
		must(t, err)
		if res.Outcome != Committed || exists(filepath.Join(base, "keep")) || len(res.Validators) != 0 {
			t.Errorf("undo: %s, validators %q", res.Outcome, res.Validators)
		}
	})
}
