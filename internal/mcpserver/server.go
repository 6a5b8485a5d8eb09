package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/buildinfo"
	"github.com/airlockdev/airlock/internal/jsonout"
)

// instructions tell the agent how the tools fit together.
const instructions = `airlock gives you a transactional workspace over a project directory (the base).
1. open {path} returns a transaction id and a staged path: a private copy of the base. Read and write files ONLY under the staged path; the base does not change while you work.
2. run {id, command} runs a shell command (a build, the tests) in the staged path, at the project's own path where it can, and returns its exit code and output; the transaction stays open.
3. diff {id} shows your change set (format patch, stat or name-status); status {id} summarises it.
4. commit {id} applies the whole change set to the base, all or nothing, after fail-closed checks (drift since open, protected paths, symlink escapes, the project's validate command, which always runs; validate adds a command of yours after it). A refusal comes back as outcome "refused" with its kind, the refused_paths and a reason that says what to do: fix the cause in the staged path and commit again. Protected paths (e.g. .envrc, .github/workflows/, .airlock.toml) land only with the user's approval: set approve: true only when the user asked for that change, and the server asks the user to confirm it (through your client; a client that cannot ask gets a refusal naming how the user approves: airlock review <id> or airlock commit <id> --approve). If the change set changes after the user answered, nothing lands. Paths the base had changed too and that were merged are listed in merged. Git commits you made in the staged path are kept in the project's repository on branch airlock/<id> (branch in the result). If a commit call is cancelled before its journal is written, nothing is applied; after that point it completes: call status to see the outcome.
5. discard {id} drops the change set (your git commits are kept on branch airlock/<id> unless drop_commits is true). list shows the open transactions.`

// New returns an MCP server whose tools act on the transactions of store.
func New(store *airlock.Store) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "airlock", Title: "airlock transactions", Version: buildinfo.Get().Version},
		&mcp.ServerOptions{Instructions: instructions})
	h := &handlers{store: store}
	no, yes := false, true
	mcp.AddTool(s, &mcp.Tool{
		Name:        "open",
		Description: "Open a transaction over a project directory: returns its id and the staged path, a private copy of the directory in which to make every change. The directory itself is not touched. path may be relative to the server's working directory.",
		Annotations: &mcp.ToolAnnotations{Title: "Open a transaction", DestructiveHint: &no, OpenWorldHint: &no},
	}, worded(h.open))
	mcp.AddTool(s, &mcp.Tool{
		Name:        "status",
		Description: "Summarise a transaction: its status (open, refused, committed, ...), base, staged path, added/modified/deleted counts, diff_digest and, after a refused commit, the refusal and its paths. with_receipt: true adds the receipt itself (receipt_body), which commit and discard leave out.",
		Annotations: &mcp.ToolAnnotations{Title: "Transaction status", ReadOnlyHint: true, DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no},
	}, worded(h.status))
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list",
		Description: "List the transactions that are open or retained (refused, interrupted); all=true adds the settled ones.",
		Annotations: &mcp.ToolAnnotations{Title: "List transactions", ReadOnlyHint: true, DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no},
	}, worded(h.list))
	mcp.AddTool(s, &mcp.Tool{
		Name:        "diff",
		Description: "Show a transaction's change set: format patch (default; a git-style patch that `git apply` accepts), stat (like git diff --stat) or name-status (like git diff --name-status). The text itself is the result's text content, as it is, not escaped; the structured result only says its format, size and notes.",
		Annotations: &mcp.ToolAnnotations{Title: "Show the change set", ReadOnlyHint: true, DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no},
		InputSchema: diffSchema(),
	}, worded(h.diff))
	mcp.AddTool(s, &mcp.Tool{
		Name:        "run",
		Description: "Run a shell command (sh -c) in an open transaction's staged tree, at the project's own path where the system allows (same_path says), so that builds and tests see the tree as they would the project; the transaction stays open, and what the command writes is part of its change set, which commit lands. A non-zero exit is a result, not an error. The command's stdout and stderr are the result's text content, each cut to its first and last 8 KiB (stdout_cut and stderr_cut count the bytes dropped between); it is ended after timeout_seconds (default 600), and whatever it leaves running is ended when it exits. A commit or discard of the transaction while a run in it is in flight is refused: commit once the run has returned.",
		Annotations: &mcp.ToolAnnotations{Title: "Run a command in the staged tree", DestructiveHint: &yes, OpenWorldHint: &yes},
	}, worded(h.run))
	mcp.AddTool(s, &mcp.Tool{
		Name:        "commit",
		Description: "Apply the transaction's whole change set to its base, all or nothing (or, with paths, only the changes under those paths; the rest stays open), after the fail-closed checks and validation on a candidate tree (base + change set): the project's validate from .airlock.toml always runs, and validate, if given, adds a second validator after it (it can neither replace nor skip the project's). A refusal is a normal result: outcome \"refused\" with refusal (the kind), refused_paths and reason (what happened and what to do); the transaction is kept so that the cause can be fixed in the staged path and the commit repeated. approve: true asks for changes to protected paths to land: the server asks the user to confirm them (MCP elicitation, showing the paths and their patch) and lands them only if the user accepts, and only the change set the user saw; a declined request, or a client that cannot ask, refuses ProtectedPathNotApproved with the user's ways to approve (airlock review <id>, airlock commit <id> --approve). approve: true is not an approval in itself (unless the project's .airlock.toml sets agents_approve = true): set it only when the user asked for that change. Committing a committed transaction reports its first outcome. Cancelling the call stops the commit only before its journal is written (nothing applied, the transaction kept as it was); after that it runs to its end, and status tells the outcome.",
		Annotations: &mcp.ToolAnnotations{Title: "Commit the change set", DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &yes},
	}, worded(h.commit))
	mcp.AddTool(s, &mcp.Tool{
		Name:        "discard",
		Description: "Drop the transaction's change set and its staged copy; the base is not touched. The work in the staged path is lost, except git commits made there, which are kept in the project's repository on branch airlock/<id> unless drop_commits is true.",
		Annotations: &mcp.ToolAnnotations{Title: "Discard the change set", DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &no},
	}, worded(h.discard))
	addCheckpointTools(s, h)
	return s
}

// Serve runs the server over t until the client goes away. A client that
// closes its input is still answered: every call read before the end gets
// its reply before Serve returns (answering).
func Serve(ctx context.Context, store *airlock.Store, t mcp.Transport) error {
	return New(store).Run(ctx, answering(t))
}

type handlers struct {
	store *airlock.Store
	asked asked
	busy  busy
}

// OpenInput is the open tool's input.
type OpenInput struct {
	Path    string   `json:"path" jsonschema:"the project directory to work on (the base); relative paths are resolved against the server's working directory"`
	ID      string   `json:"id,omitempty" jsonschema:"the transaction id to use ([A-Za-z0-9._-]{1,64}); default: generated"`
	Exclude []string `json:"exclude,omitempty" jsonschema:"gitignore-style selectors not copied into the staged workspace, added to the project's"`
	Protect []string `json:"protect,omitempty" jsonschema:"gitignore-style selectors whose changes land only with the user's approval, added to the project's"`
}

// OpenOutput is the open tool's result.
type OpenOutput struct {
	ID       string   `json:"id" jsonschema:"the transaction id"`
	Path     string   `json:"path" jsonschema:"the staged path: make every change under it"`
	Base     string   `json:"base" jsonschema:"the project directory the transaction protects"`
	Backend  string   `json:"backend"`
	PortBase int      `json:"port_base" jsonschema:"the first of 10 TCP ports no other open transaction holds"`
	Protect  []string `json:"protect" jsonschema:"the protected selectors: changes under them land only with the user's approval (commit with approve: true asks the user)"`
	Validate string   `json:"validate,omitempty" jsonschema:"the project's validate command, run on the candidate tree at every commit; it cannot be turned off"`
	Warnings []string `json:"warnings,omitempty"`
}

func (h *handlers) open(ctx context.Context, _ *mcp.CallToolRequest, in OpenInput) (*mcp.CallToolResult, OpenOutput, error) {
	tx, err := h.store.Open(ctx, airlock.OpenOptions{
		Base: in.Path, ID: in.ID, Exclude: in.Exclude, Protect: in.Protect,
		Command: []string{"airlock", "mcp"},
	})
	if err != nil {
		return nil, OpenOutput{}, err
	}
	rec := tx.Record()
	return nil, OpenOutput{
		ID: tx.ID(), Path: tx.Path(), Base: tx.Base(), Backend: rec.Backend, PortBase: rec.PortBase,
		Protect: rec.Protect, Validate: rec.Validate, Warnings: rec.Warnings,
	}, nil
}

// IDInput names a transaction.
type IDInput struct {
	ID string `json:"id" jsonschema:"the transaction id"`
}

// StatusInput is the status tool's input.
type StatusInput struct {
	ID          string `json:"id" jsonschema:"the transaction id"`
	WithReceipt bool   `json:"with_receipt,omitempty" jsonschema:"add the receipt itself (receipt_body), once the transaction has one: every path's digests and file facts, which commit and discard leave out"`
}

// StatusOutput is the status tool's result: the transaction as `airlock
// show --json` gives it, and, when asked for, its receipt.
type StatusOutput struct {
	*airlock.Info
	ReceiptBody map[string]any `json:"receipt_body,omitempty" jsonschema:"with with_receipt: the receipt (schema airlock.receipt/v1)"`
}

func (h *handlers) status(ctx context.Context, _ *mcp.CallToolRequest, in StatusInput) (*mcp.CallToolResult, StatusOutput, error) {
	tx, err := h.store.Tx(in.ID)
	if err != nil {
		return nil, StatusOutput{}, err
	}
	info, err := tx.InfoWithDigest(ctx)
	if err != nil {
		return nil, StatusOutput{}, err
	}
	out := StatusOutput{Info: info}
	if in.WithReceipt && info.Receipt != "" {
		rc, err := tx.Receipt()
		if err != nil {
			return nil, StatusOutput{}, fmt.Errorf("transaction %s: read its receipt %s: %w", tx.ID(), info.Receipt, err)
		}
		if out.ReceiptBody, err = asObject(rc); err != nil {
			return nil, StatusOutput{}, err
		}
	}
	return nil, out, nil
}

// ListInput is the list tool's input.
type ListInput struct {
	All bool `json:"all,omitempty" jsonschema:"also list committed, discarded and unchanged transactions"`
}

// ListOutput is the list tool's result.
type ListOutput struct {
	Transactions []*airlock.Info `json:"transactions"`
}

func (h *handlers) list(ctx context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, ListOutput, error) {
	infos, err := h.store.List(ctx, in.All)
	if infos == nil {
		infos = []*airlock.Info{}
	}
	return nil, ListOutput{Transactions: infos}, err
}

// DiffInput is the diff tool's input.
type DiffInput struct {
	ID     string `json:"id" jsonschema:"the transaction id"`
	Format string `json:"format,omitempty" jsonschema:"patch (default), stat or name-status"`
}

// DiffOutput is the diff tool's structured result. The text itself is the
// result's text content only: a client that hands the model the
// structured result (Claude Code does) would otherwise give it a patch
// escaped into one JSON string.
type DiffOutput struct {
	Format string   `json:"format"`
	Bytes  int      `json:"bytes" jsonschema:"the size of the text, which is the result's text content"`
	Lines  int      `json:"lines" jsonschema:"its lines"`
	Empty  bool     `json:"empty,omitempty" jsonschema:"there are no changes"`
	Notes  []string `json:"notes,omitempty" jsonschema:"what a git patch cannot carry (directories, permission bits other than x)"`
}

var diffFormats = map[string]airlock.DiffFormat{
	"patch": airlock.DiffPatch, "stat": airlock.DiffStat, "name-status": airlock.DiffNameStatus,
}

// diffSchema is DiffInput's inferred schema with format's values listed,
// so that a client sees them and the SDK refuses others before the
// handler runs.
func diffSchema() *jsonschema.Schema {
	s, err := jsonschema.For[DiffInput](nil)
	if err != nil {
		panic(fmt.Sprintf("diff input schema: %v", err))
	}
	s.Properties["format"].Enum = []any{"patch", "stat", "name-status"}
	return s
}

func (h *handlers) diff(ctx context.Context, _ *mcp.CallToolRequest, in DiffInput) (*mcp.CallToolResult, DiffOutput, error) {
	if in.Format == "" {
		in.Format = "patch"
	}
	format, ok := diffFormats[in.Format]
	if !ok {
		return nil, DiffOutput{}, fmt.Errorf("format %q: want patch, stat or name-status", in.Format)
	}
	tx, err := h.store.Tx(in.ID)
	if err != nil {
		return nil, DiffOutput{}, err
	}
	var buf bytes.Buffer
	notes, err := tx.Diff(ctx, &buf, format)
	if err != nil {
		return nil, DiffOutput{}, err
	}
	text := buf.String()
	out := DiffOutput{Format: in.Format, Bytes: len(text), Lines: strings.Count(text, "\n"), Empty: text == "", Notes: notes}
	content := text
	if content == "" {
		content = "(no changes)\n"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: content}}}, out, nil
}

// CommitInput is the commit tool's input.
type CommitInput struct {
	ID           string `json:"id" jsonschema:"the transaction id"`
	Approve      bool   `json:"approve,omitempty" jsonschema:"ask for changes to protected paths to land: the server asks the user to confirm them; only when the user asked for them"`
	Validate     string `json:"validate,omitempty" jsonschema:"an additional shell command run on the candidate tree (base + change set) after the project's validate from .airlock.toml, which always runs; either exiting non-zero refuses"`
	ExpectDigest string `json:"expect_digest,omitempty" jsonschema:"commit only if the change set is still the one reviewed: its diff_digest (status returns it); otherwise the commit is refused ReviewStale"`
	// Paths make the commit partial (CommitOptions.Paths).
	Paths []string `json:"paths,omitempty" jsonschema:"commit only these paths (relative to the project; a directory names everything beneath it; a changed path, byte for byte, selects exactly itself; any other path is a gitignore selector: wildcards, a leading ! takes back): the rest stays in the transaction for a later commit, and the result's tx is the part's own id (ID.N) for undo"`
}

// DiscardInput is the discard tool's input.
type DiscardInput struct {
	ID          string `json:"id" jsonschema:"the transaction id"`
	DropCommits bool   `json:"drop_commits,omitempty" jsonschema:"let git commits made in the staged path go too, instead of keeping them on branch airlock/<id> in the project's repository"`
}

// SettleOutput is what commit and discard return: what a model acts on,
// under the names of the command line's settle result (jsonout.Settle,
// docs/json.md), in the types this tool's schema gives them. The receipt
// itself is left to status: most of its bytes are digests and inode
// numbers (974 of 1,054 in the commit), which no next step of an
// agent reads, and a client may hand the model every byte of the result.
type SettleOutput struct {
	TxID         string   `json:"tx"`
	Outcome      string   `json:"outcome" jsonschema:"committed, refused, no_changes or discarded"`
	Refusal      string   `json:"refusal,omitempty" jsonschema:"when refused: BaseDrift, MergeConflict, ProtectedPathNotApproved, BoundaryEscape, SharedInode, UnsupportedEntry, ValidationFailed, ApplyFailed, InterruptedApply, StagedChanged, ReviewStale or Conflicted"`
	RefusedPaths []string `json:"refused_paths,omitempty" jsonschema:"the base-relative paths the refusal names"`
	Reason       string   `json:"reason,omitempty" jsonschema:"what happened and what to do, in this server's terms (tool arguments)"`
	Merged       []string `json:"merged,omitempty" jsonschema:"paths the base had changed since open too, three-way merged: what landed holds both sides' edits"`
	Branch       string   `json:"branch,omitempty" jsonschema:"the git branch in the project's repository that keeps the commits made in the staged path (airlock/<id>)"`
	BranchHead   string   `json:"branch_head,omitempty" jsonschema:"the commit branch names"`
	Added        int      `json:"added"`
	Modified     int      `json:"modified"`
	Deleted      int      `json:"deleted"`
	// Kept are deleted directories kept because they hold paths the
	// transaction never saw.
	Kept          []string `json:"kept,omitempty"`
	Repeat        bool     `json:"repeat,omitempty" jsonschema:"the transaction had already settled; this reports its first outcome"`
	Validators    []string `json:"validators,omitempty" jsonschema:"the validate commands that ran on the candidate, in order: the project's, then the one given; after ValidationFailed the last is the one that failed"`
	ReceiptPath   string   `json:"receipt_path,omitempty" jsonschema:"the receipt's file; status with with_receipt: true returns the receipt itself"`
	ReceiptDigest string   `json:"receipt_digest,omitempty" jsonschema:"the receipt's digest, which seals it (airlock receipt verify checks it)"`
	// PartOf and Paths: a partial commit's (jsonout.Settle).
	PartOf string   `json:"part_of,omitempty" jsonschema:"a partial commit that landed: the transaction it took part of, which stays open with the rest"`
	Paths  []string `json:"paths,omitempty" jsonschema:"a partial commit that landed: the paths it landed"`
}

// commit passes the request's context on: a client that cancels the call
// (Claude Code's Esc) stops the commit only up to its journal, and then
// nothing was applied; from the journal on the commit runs to its end and
// the result is its real outcome (Tx.Commit).
//
// approve: true is the agent's word, and approval is the user's act: it
// lands protected changes only once the user has accepted them through
// the client (MCP elicitation, asked by returning an input request; see
// approval.go), or where the project's .airlock.toml sets agents_approve.
func (h *handlers) commit(ctx context.Context, req *mcp.CallToolRequest, in CommitInput) (*mcp.CallToolResult, SettleOutput, error) {
	// Every commit here is an agent's: an approval it gives itself stands
	// only where the project lets agents approve (Tx.Commit decides, with
	// the config as the base holds it at the commit).
	o := airlock.CommitOptions{Validate: in.Validate, ExpectDiffDigest: in.ExpectDigest, AgentApproval: true, Paths: in.Paths}
	if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
		return h.answered(ctx, req, in, o)
	}
	canAsk := canElicit(req)
	if !in.Approve {
		// Where the client can ask its user, the remedy of a refusal is
		// to ask (approve: true); where it cannot, only a person's ways.
		o.AgentApproval = !canAsk
		return h.settle(ctx, in.ID, commitWith(ctx, o), "")
	}
	o.Approve = true
	if !canAsk {
		return h.settle(ctx, in.ID, commitWith(ctx, o), "this MCP client cannot ask the user to approve protected changes (it offers no elicitation), and approve: true from you is not the user's approval")
	}
	return h.ask(ctx, in, o)
}

// commitWith is a commit with o.
func commitWith(ctx context.Context, o airlock.CommitOptions) func(*airlock.Tx) (*airlock.Result, error) {
	return func(tx *airlock.Tx) (*airlock.Result, error) { return tx.Commit(ctx, o) }
}

// discard runs to its end even when the client cancels: it is quick, and a
// discard half done would leave a transaction neither open nor settled.
func (h *handlers) discard(ctx context.Context, _ *mcp.CallToolRequest, in DiscardInput) (*mcp.CallToolResult, SettleOutput, error) {
	return h.settle(ctx, in.ID, func(tx *airlock.Tx) (*airlock.Result, error) {
		return tx.Discard(context.WithoutCancel(ctx), airlock.DiscardOptions{DropCommits: in.DropCommits})
	}, "")
}

// settle turns a settle's result into the tool's. A refusal is a result;
// only a failure to settle at all (a cancelled commit included) is a tool
// error. note, when set, says what the server did about approval, before
// a ProtectedPathNotApproved refusal's reason.
func (h *handlers) settle(ctx context.Context, id string, do func(*airlock.Tx) (*airlock.Result, error), note string) (*mcp.CallToolResult, SettleOutput, error) {
	tx, err := h.store.Tx(id)
	if err != nil {
		return nil, SettleOutput{}, err
	}
	end, err := h.busy.begin(tx.ID(), true)
	if err != nil {
		return nil, SettleOutput{}, err
	}
	defer end()
	res, err := do(tx)
	var r *airlock.Refusal
	if err != nil && !errors.As(err, &r) {
		return nil, SettleOutput{}, err
	}
	if res == nil {
		return nil, SettleOutput{}, fmt.Errorf("transaction %s: the settle returned no result", id)
	}
	// The command line's settle result, as this tool returns it.
	js := jsonout.NewSettle(res, explain)
	out := SettleOutput{
		TxID: js.Tx, Outcome: string(js.Outcome), Added: js.Added, Modified: js.Modified,
		Deleted: js.Deleted, Kept: texts(js.Kept), Repeat: js.Repeat, Validators: texts(js.Validators), ReceiptPath: js.ReceiptPath,
		Merged: texts(js.Merged),
	}
	if js.SettleBranch != nil {
		out.Branch, out.BranchHead = js.Branch, js.BranchHead
	}
	out.PartOf, out.Paths = js.PartOf, texts(js.Paths)
	if r == nil {
		r = res.Refusal
	}
	if r != nil {
		out.Outcome = string(airlock.Refused)
		out.Refusal, out.RefusedPaths, out.Reason = string(r.Kind), r.Paths, explain(r)
		if note != "" && r.Kind == airlock.ProtectedPathNotApproved {
			out.Reason = note + ": " + out.Reason
		}
	}
	if js.Receipt != nil {
		out.ReceiptDigest = js.Receipt.Digest
	}
	return nil, out, nil
}

// texts is paths as the tool's schema has them, strings; nil when there
// are none.
func texts(paths []airlock.Bytes) []string {
	var out []string
	for _, p := range paths {
		out = append(out, string(p))
	}
	return out
}

// asObject is v's JSON form as a generic object: the receipt's JSON is its
// own (field names, byte-exact paths), which a Go-type schema would not
// describe.
func asObject(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}
