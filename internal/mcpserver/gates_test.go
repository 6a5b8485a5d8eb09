package mcpserver

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlockdev/airlock"
)

// TestOpenSubdirIsGovernedByTheProject: the open tool over a subdirectory
// of a project ("src") is governed by the project's .airlock.toml: its
// validate is reported at open and runs at commit, on a candidate of the
// whole project, and refuses.
func TestOpenSubdirIsGovernedByTheProject(t *testing.T) {
	w := newWorld(t, map[string]string{".airlock.toml": "validate = \"test -f top.txt && grep -q ok src/a.txt\"\n", "top.txt": "t", "src/a.txt": "ok\n"})
	for _, tc := range []struct {
		content, outcome, refusal string
	}{
		{"evil\n", "refused", "ValidationFailed"},
		{"ok, and more\n", "committed", ""},
	} {
		var o OpenOutput
		w.call("open", map[string]any{"path": filepath.Join(w.base, "src")}, &o)
		if o.Validate == "" {
			t.Errorf("open over src reports no validate; the project's governs it")
		}
		writeFiles(t, o.Path, map[string]string{"a.txt": tc.content})
		var s SettleOutput
		w.call("commit", map[string]any{"id": o.ID}, &s)
		if s.Outcome != tc.outcome || s.Refusal != tc.refusal || !slices.Equal(s.Validators, []string{o.Validate}) {
			t.Errorf("commit of %q: %s %s validators %q, want %s %s and the project's validate", tc.content, s.Outcome, s.Refusal, s.Validators, tc.outcome, tc.refusal)
		}
		if got := readFile(t, filepath.Join(w.base, "src/a.txt")); tc.outcome == "refused" && got != "ok\n" {
			t.Errorf("src/a.txt = %q after a refusal", got)
		}
	}
}

// TestCommitExpectDigest: the commit tool's expect_digest binds the commit
// to the change set the status tool reported.
func TestCommitExpectDigest(t *testing.T) {
	w := newWorld(t, map[string]string{"a.txt": "a\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base}, &o)
	writeFiles(t, o.Path, map[string]string{"a.txt": "reviewed\n"})
	var in airlock.Info
	w.call("status", map[string]any{"id": o.ID}, &in)
	if in.DiffDigest == "" {
		t.Fatal("status reports no diff_digest")
	}
	writeFiles(t, o.Path, map[string]string{"a.txt": "changed after the review\n"})
	var s SettleOutput
	w.call("commit", map[string]any{"id": o.ID, "expect_digest": in.DiffDigest}, &s)
	if s.Outcome != "refused" || s.Refusal != string(airlock.ReviewStale) {
		t.Fatalf("commit of a changed change set: %s %s, want refused ReviewStale", s.Outcome, s.Refusal)
	}
	if got := readFile(t, filepath.Join(w.base, "a.txt")); got != "a\n" {
		t.Errorf("a.txt = %q after a refusal", got)
	}
	w.call("status", map[string]any{"id": o.ID}, &in)
	w.call("commit", map[string]any{"id": o.ID, "expect_digest": in.DiffDigest}, &s)
	if s.Outcome != "committed" {
		t.Errorf("commit of the reviewed change set: %s %s", s.Outcome, s.Refusal)
	}
}
