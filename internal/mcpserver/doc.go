// Package mcpserver serves airlock's transactions to an agent over the
// Model Context Protocol (the official Go SDK), and guarantees that every
// tool goes through the same public API the CLI uses: a commit through the
// MCP server is the same all-or-nothing, fail-closed commit as `airlock
// commit`, and a refusal reaches the agent as a structured result (its
// kind and paths), not as a transport error.
//
// # Tools
//
//	open     {path, id?, exclude?, protect?}   → {id, path, base, backend, port_base, protect, validate}
//	status   {id, with_receipt?}                 → the transaction's Info (as `airlock show --json`), and its receipt_body
//	list     {all?}                            → {transactions: [Info]}
//	diff     {id, format?: patch|stat|name-status} → {format, bytes, lines, empty, notes}; the text is the content
//	run      {id, command, dir?, timeout_seconds?} → {exit_code, timed_out, stdout_cut, stderr_cut, dir, same_path, ...}; the output is the content
//	commit   {id, approve?, validate?, expect_digest?} → {tx, outcome, refusal, refused_paths, reason, counts, merged, branch, validators, receipt_path, receipt_digest}
//	discard  {id, drop_commits?}               → {tx, outcome, counts, branch, receipt_path, receipt_digest}
//	checkpoint {id, message?}                  → {tx, number, time, message, counts, digest} (checkpoint.go)
//	rewind   {id, number}                      → {tx, to, saved, paths}
//
// commit and discard return what a model acts on; the receipt itself,
// mostly digests and inode numbers, is status's (with_receipt).
//
// A refusal's reason names its remedy in this server's terms (approve:
// true, expect_digest), or, where only the user can act, the user's own
// commands (remedy.go).
//
// # Approval
//
// Protected changes land only with the user's approval, and an agent
// reads the commit tool's schema: approve: true is a request, not an
// approval. The server asks the user through the client (MCP elicitation:
// a form with the transaction, its base, the protected paths and their
// patch; an input request the commit call returns, which the SDK turns
// into elicitation/create for clients before 2026-07-28) and lands them
// only if the user accepts, bound to the change set the question was made
// from (CommitOptions.ExpectDiffDigest: a change set changed meanwhile is
// refused ReviewStale). A declined or dismissed question, or a client that
// does not offer elicitation, refuses ProtectedPathNotApproved with the
// user's ways to approve (`airlock review ID`, `airlock commit ID
// --approve`). A project whose .airlock.toml sets agents_approve = true
// lets approve: true stand without asking (CommitOptions.AgentApproval).
// The diff text travels as the text content only, unescaped; the
// structured result stays small, because a client may hand the model the
// structured result rather than the text.
//
// run runs a command in the staged tree through Tx.Exec, as `airlock run`
// launches one (contained, registered among the running commands, the
// state root read-only), without settling: the agent builds and tests in
// the transaction and commits after. A commit or discard of a transaction
// with a run in flight in this server is refused (busy), so that no settle
// reads or drops a tree a command is writing.
//
// status, list and diff are read-only. open only adds (a staged copy; the
// base is untouched). commit writes the base and discard drops the agent's
// work: both are destructive, and both are idempotent (settling a settled
// transaction reports its first outcome). commit is open-world because it
// runs the project's validate command. A commit call the client cancels
// stops only before the commit's journal is written, with nothing applied;
// from there the commit runs to its end and its outcome is recorded, which
// status reports.
//
// The commit tool cannot lower the project's validate (.airlock.toml at
// the base, recorded at open): it always runs, first. A `validate` the
// agent gives is a second validator run after it on the same candidate,
// never a replacement; an empty one adds nothing. The result's validators
// (and the receipt's) say which ran. Changing the project's validate is a
// change to .airlock.toml in the base, which applies only to transactions
// opened after it lands.
package mcpserver
