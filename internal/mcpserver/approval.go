package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock"
)

// Approval over MCP. An agent that reads the commit tool's schema can set
// approve: true, so that argument alone approves nothing: the server asks
// the user through the client (MCP elicitation), naming the transaction,
// its base and the protected paths, with their patch, and lands them only
// if the user accepts. The question is an input request the commit call
// returns (multi round-trip requests): a client on the 2026-07-28 protocol
// asks its user and calls again with the answer; for an older one the SDK
// asks with elicitation/create and calls the handler again itself. Either
// way the answer comes back to answered, with the request state this
// server handed out.
//
// What the user accepted is bound to the change set they were shown: the
// question is built from one frozen snapshot (Tx.ReviewApproval), and the
// commit after an accept expects that snapshot's digest, so a change set
// the agent changed in between refuses ReviewStale and nothing lands.

// approvalKey names the one input request of a commit call.
const approvalKey = "approve_protected"

// canElicit reports whether the calling client can ask its user a
// question in a form: it advertises elicitation (form mode, or no mode,
// which means form).
func canElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// question is an approval this server asked for and has had no answer to.
type question struct {
	tx, digest string
}

// asked are the questions out, by the request state handed out with each:
// a random token, so that the answer to one can come only from the client
// the question went to, once.
type asked struct {
	mu    sync.Mutex
	out   map[string]question
	order []string
}

// maxAsked bounds the questions kept for answers that never come (a
// client that dropped the call).
const maxAsked = 32

func (a *asked) put(q question) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.out == nil {
		a.out = map[string]question{}
	}
	a.out[token] = q
	a.order = append(a.order, token)
	for len(a.order) > maxAsked {
		delete(a.out, a.order[0])
		a.order = a.order[1:]
	}
	return token, nil
}

func (a *asked) take(token string) (question, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q, ok := a.out[token]
	delete(a.out, token)
	return q, ok
}

// ask is a commit with approve: true from a client that can ask its user:
// it returns the question, or commits at once where nothing needs the
// user (no protected change, a project whose agents approve, a change set
// that is not the one expect_digest names).
func (h *handlers) ask(ctx context.Context, in CommitInput, o airlock.CommitOptions) (*mcp.CallToolResult, SettleOutput, error) {
	tx, err := h.store.Tx(in.ID)
	if err != nil {
		return nil, SettleOutput{}, err
	}
	var patch bytes.Buffer
	ap, err := tx.ReviewApproval(ctx, &patch)
	var r *airlock.Refusal
	if errors.As(err, &r) {
		// The agent is still writing (StagedChanged): the commit says so.
		return h.settle(ctx, in.ID, commitWith(ctx, o), "")
	}
	if err != nil {
		return nil, SettleOutput{}, err
	}
	if len(ap.Paths) == 0 || ap.AgentsApprove || (in.ExpectDigest != "" && in.ExpectDigest != ap.Digest) {
		return h.settle(ctx, in.ID, commitWith(ctx, o), "")
	}
	token, err := h.asked.put(question{tx: tx.ID(), digest: ap.Digest})
	if err != nil {
		return nil, SettleOutput{}, fmt.Errorf("ask the user to approve: %w", err)
	}
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalKey: &mcp.ElicitParams{
			Mode:            "form",
			Message:         approvalMessage(tx, ap, patch.Bytes()),
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		}},
		RequestState: token,
	}, SettleOutput{}, nil
}

// answered is the commit call again, with the user's answer: an accept
// lands the change set the user was shown, and only that one; a decline
// or a dismissal refuses it.
func (h *handlers) answered(ctx context.Context, req *mcp.CallToolRequest, in CommitInput, o airlock.CommitOptions) (*mcp.CallToolResult, SettleOutput, error) {
	q, ok := h.asked.take(req.Params.RequestState)
	if !ok || q.tx != in.ID {
		return nil, SettleOutput{}, fmt.Errorf("transaction %s: this answer is to no approval this server asked for (or one answered already); call commit again", in.ID)
	}
	if in.ExpectDigest != "" && in.ExpectDigest != q.digest {
		return nil, SettleOutput{}, fmt.Errorf("transaction %s: expect_digest changed between the call and the user's answer; call commit again", in.ID)
	}
	o.ExpectDiffDigest = q.digest
	res, _ := req.Params.InputResponses[approvalKey].(*mcp.ElicitResult)
	if res != nil && res.Action == "accept" {
		// The user's approval, of this change set only.
		o.Approve, o.AgentApproval = true, false
		return h.settle(ctx, in.ID, commitWith(ctx, o), "")
	}
	note := "the user was asked and did not approve them"
	switch {
	case res == nil:
		note = "the user was asked and gave no answer"
	case res.Action == "decline":
		note = "the user declined to approve them"
	case res.Action == "cancel":
		note = "the user dismissed the request to approve them"
	}
	o.Approve = false
	return h.settle(ctx, in.ID, commitWith(ctx, o), note)
}

// The question shows at most this much of the protected changes' patch.
const (
	maxPatchLines = 60
	maxPatchBytes = 4000
)

// approvalMessage is the question the user reads: which transaction wants
// to land which protected paths where, the patch of those paths, and what
// accepting does. Every name the agent chose is quoted, and every line of
// the patch marked and stripped of control characters, so that nothing
// the agent wrote can pass for the server's own words.
func approvalMessage(tx *airlock.Tx, ap *airlock.Approval, patch []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "airlock: the agent asks to commit transaction %s into %s, and its change set touches protected paths, which land only with your approval:\n", strconv.Quote(tx.ID()), strconv.Quote(tx.Base()))
	for _, p := range ap.Paths {
		fmt.Fprintf(&b, "  %s\n", strconv.Quote(p))
	}
	b.WriteString("(Protected paths make other tools run code outside the transaction, or change airlock's rules.)\n\n")
	lines := strings.Split(strings.TrimRight(string(patch), "\n"), "\n")
	shown := 0
	for i, l := range lines {
		if l == "" && len(lines) == 1 {
			break
		}
		if i == maxPatchLines || shown+len(l) > maxPatchBytes {
			fmt.Fprintf(&b, "  | … %d more lines: `airlock diff %s` shows them all\n", len(lines)-i, tx.ID())
			break
		}
		shown += len(l)
		b.WriteString("  | ")
		b.WriteString(printable(l))
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\nAccept lands the whole change set (%s, `airlock diff %s`) as it is now; if the agent changes it before the commit, nothing lands. Decline refuses the commit; you can still look and approve later with `airlock review %s`.", ap.Digest, tx.ID(), tx.ID())
	return b.String()
}

// printable is l with control characters (a carriage return, an escape
// sequence) written as Go escapes.
func printable(l string) string {
	if strings.IndexFunc(l, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }) < 0 {
		return l
	}
	q := strconv.Quote(l)
	return q[1 : len(q)-1]
}
