package jsonout

import (
	"encoding/json"
	"time"

	"github.com/airlockdev/airlock"
)

// RawPaths gives paths the receipt's JSON form, in which a path that is
// not valid UTF-8 keeps its bytes ({"base64": ...}) instead of turning
// into U+FFFD.
func RawPaths(paths []string) []airlock.Bytes {
	out := make([]airlock.Bytes, len(paths))
	for i, p := range paths {
		out[i] = airlock.Bytes(p)
	}
	return out
}

// NonNil is s, or an empty list for nil: a list is [] when empty, never
// null.
func NonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Open is `open --json`: the transaction just opened.
type Open struct {
	Backend  string `json:"backend"`
	Base     string `json:"base"`
	ID       string `json:"id"`
	Path     string `json:"path"`
	PortBase int    `json:"port_base"`
}

// NewOpen is tx's Open.
func NewOpen(tx *airlock.Tx) Open {
	rec := tx.Record()
	return Open{Backend: rec.Backend, Base: tx.Base(), ID: tx.ID(), Path: tx.Path(), PortBase: rec.PortBase}
}

// Settle is a settle result: `commit --json`, `discard`, `undo`, `review`
// and, with ExitCode, `run`; `land` and `recover` carry it too.
type Settle struct {
	Added int `json:"added"`
	*SettleBranch
	Deleted  int  `json:"deleted"`
	ExitCode *int `json:"exit_code,omitempty"` // only for run: its command's
	// Kept are deleted directories kept because they held paths the
	// transaction never saw.
	Kept []airlock.Bytes `json:"kept,omitempty"`
	// Measured, only for run: how the change set was read ("watch" or
	// "walk"); Unwatched (after Tx) why not by a watch, where one was
	// wanted.
	Measured string          `json:"measured,omitempty"`
	Merged   []airlock.Bytes `json:"merged,omitempty"`
	Modified int             `json:"modified"`
	Outcome  airlock.Outcome `json:"outcome"`
	// PartOf and Paths, only for a partial commit that landed: the
	// transaction it took part of, open with the rest, and the paths it
	// landed (Tx is the part's own id).
	PartOf       string              `json:"part_of,omitempty"`
	Paths        []airlock.Bytes     `json:"paths,omitempty"`
	Reason       string              `json:"reason,omitempty"` // the refusal said by the front end
	Receipt      *airlock.Receipt    `json:"receipt"`
	ReceiptPath  string              `json:"receipt_path"`
	Refusal      airlock.RefusalKind `json:"refusal,omitempty"`
	RefusedPaths []airlock.Bytes     `json:"refused_paths,omitzero"` // [] when a refusal names none
	Repeat       bool                `json:"repeat"`
	Tx           string              `json:"tx"`
	Unwatched    *string             `json:"unwatched,omitempty"` // only for run, "" when measured by the watch
	Validators   []airlock.Bytes     `json:"validators,omitempty"`
}

// SettleBranch is the branch a settle kept the command's own git commits
// on: both members or neither.
type SettleBranch struct {
	Branch     string `json:"branch"`
	BranchHead string `json:"branch_head"`
}

// NewSettle is res's settle result; say words its refusal, if any, as the
// front end that prints it says it.
func NewSettle(res *airlock.Result, say func(*airlock.Refusal) string) *Settle {
	s := &Settle{
		Tx: res.TxID, Outcome: res.Outcome, Added: res.Added, Modified: res.Modified,
		Deleted: res.Deleted, ReceiptPath: res.ReceiptPath, Receipt: res.Receipt,
		Repeat: res.Repeat,
	}
	if res.Refusal != nil {
		s.Refusal = res.Refusal.Kind
		s.RefusedPaths = RawPaths(res.Refusal.Paths)
		s.Reason = say(res.Refusal)
	}
	if len(res.Kept) > 0 {
		s.Kept = RawPaths(res.Kept)
	}
	if len(res.Validators) > 0 {
		s.Validators = RawPaths(res.Validators)
	}
	if len(res.Merged) > 0 {
		s.Merged = RawPaths(res.Merged)
	}
	if res.Branch != nil {
		s.SettleBranch = &SettleBranch{Branch: res.Branch.Name, BranchHead: res.Branch.Head}
	}
	if res.PartOf != "" && res.Receipt != nil {
		s.PartOf, s.Paths = res.PartOf, RawPaths(res.Receipt.Paths)
	}
	return s
}

// Show is `show ID --json`: the transaction object with what its record
// and event log add.
type Show struct {
	*airlock.Info
	Exclude  []airlock.Bytes `json:"exclude"`
	Protect  []airlock.Bytes `json:"protect"`
	Command  []airlock.Bytes `json:"command"`
	Warnings []string        `json:"warnings"`
	Events   []airlock.Event `json:"events"`
}

// NewShow is the Show of tx, whose Info is in and event log evs.
func NewShow(in *airlock.Info, rec airlock.Record, evs []airlock.Event) Show {
	if evs == nil {
		evs = []airlock.Event{}
	}
	return Show{in, RawPaths(rec.Exclude), RawPaths(rec.Protect), append([]airlock.Bytes{}, rec.Command...), NonNil(rec.Warnings), evs}
}

// Diff is `diff ID --json`.
type Diff struct {
	Format string   `json:"format"` // patch, stat or name-status
	Notes  []string `json:"notes"`
	Text   string   `json:"text"`
	Tx     string   `json:"tx"`
}

// Log is `log --json`: a base's receipt chain.
type Log struct {
	Base     string             `json:"base"`
	Broken   string             `json:"broken"`
	Entries  []*airlock.Receipt `json:"entries"`
	Signers  map[string]string  `json:"signers"` // digest → signer, for each signed entry
	UndoGone []string           `json:"undo_gone"`
}

// NewLog is lg's Log.
func NewLog(lg *airlock.Log) Log {
	entries := lg.Entries
	if entries == nil {
		entries = []*airlock.Receipt{}
	}
	gone := lg.UndoGone
	if gone == nil {
		gone = []string{}
	}
	signers := lg.Signers
	if signers == nil {
		signers = map[string]string{}
	}
	return Log{Base: lg.Base, Broken: lg.Broken, Entries: entries, Signers: signers, UndoGone: gone}
}

// RemoteLog is `log --remote REMOTE --branch BRANCH --json`.
type RemoteLog struct {
	Branch      string        `json:"branch"`
	Broken      string        `json:"broken"`
	Entries     []RemoteEntry `json:"entries"`
	Head        string        `json:"head"`
	Remote      string        `json:"remote"`
	Unreceipted []Unreceipted `json:"unreceipted"`
}

// Unreceipted is a commit between landings that carries no receipt.
type Unreceipted struct {
	Commit  string `json:"commit"`
	Subject string `json:"subject"`
}

// RemoteEntry is a commit on a remote branch and its verified receipt.
type RemoteEntry struct {
	Commit  string           `json:"commit"`
	Receipt *airlock.Receipt `json:"receipt"`
	Signer  string           `json:"signer"` // "" when the receipt is unsigned
}

// NewRemoteLog is lg's RemoteLog.
func NewRemoteLog(lg *airlock.RemoteLog) RemoteLog {
	entries := []RemoteEntry{}
	for _, e := range lg.Entries {
		entries = append(entries, RemoteEntry{e.Commit, e.Receipt, e.Signer})
	}
	unreceipted := []Unreceipted{}
	for _, u := range lg.Unreceipted {
		unreceipted = append(unreceipted, Unreceipted{u.Commit, u.Subject})
	}
	return RemoteLog{Branch: lg.Branch, Broken: lg.Broken, Entries: entries, Head: lg.Head, Remote: lg.Remote, Unreceipted: unreceipted}
}

// Land is `land ID... --json`.
type Land struct {
	Branch       string   `json:"branch,omitempty"` // only for a landing into a remote
	Remote       string   `json:"remote,omitempty"` // only for a landing into a remote, a URL's password masked
	Transactions []Landed `json:"transactions"`
}

// Landed is one transaction of a land.
type Landed struct {
	Already  bool    `json:"already,omitempty"`  // only when true: on the remote branch before
	Attempts int     `json:"attempts,omitempty"` // only for a landing into a remote
	Commit   string  `json:"commit,omitempty"`   // only for a landing into a remote
	Error    string  `json:"error,omitempty"`    // only when it failed (or was stopped), said by the front end
	Result   *Settle `json:"result,omitempty"`
	Tx       string  `json:"tx"`
}

// GC is `gc --json`.
type GC struct {
	DryRun       bool         `json:"dry_run"`
	Freed        int64        `json:"freed"`
	PooledTrees  []PooledTree `json:"pooled_trees"`
	Transactions []GCItem     `json:"transactions"`
}

// GCItem is a transaction gc removed or kept.
type GCItem struct {
	Bytes     int64          `json:"bytes"`
	GraceEnds *time.Time     `json:"grace_ends,omitempty"` // only when kept for its grace
	ID        string         `json:"id"`
	Reason    string         `json:"reason"`
	Removed   bool           `json:"removed"`
	Status    airlock.Status `json:"status"`
	UndoLost  bool           `json:"undo_lost"`
}

// PooledTree is a pooled staged tree gc removed or kept.
type PooledTree struct {
	Bytes   int64  `json:"bytes"`
	Reason  string `json:"reason"`
	Removed bool   `json:"removed"`
	Tx      string `json:"tx"`
}

// Recover is `recover --json`: what recover found and did.
type Recover struct {
	Action    string   `json:"action"` // nothing, rolled_back, rolled_forward, orphaned or base_gone
	Base      string   `json:"base"`
	Digest    string   `json:"digest,omitempty"` // only when rolled back
	Displaced []string `json:"displaced"`
	Journal   string   `json:"journal,omitempty"` // only when the base is gone
	Notes     []string `json:"notes"`
	Result    *Settle  `json:"result,omitempty"`
	Tx        string   `json:"tx"`
}

// NewRecover is rr's Recover; say words its result's refusal, if any.
func NewRecover(rr *airlock.RecoverResult, say func(*airlock.Refusal) string) Recover {
	action := "rolled_back"
	switch {
	case rr.TxID == "":
		action = "nothing"
	case rr.BaseGone:
		action = "base_gone"
	case rr.Orphaned:
		action = "orphaned"
	case rr.RolledForward:
		action = "rolled_forward"
	}
	r := Recover{Action: action, Base: rr.Base, Displaced: NonNil(rr.Displaced), Journal: rr.Journal, Notes: NonNil(rr.Notes), Tx: rr.TxID}
	if action == "rolled_back" {
		r.Digest = rr.Digest
	}
	if rr.Result != nil {
		r.Result = NewSettle(rr.Result, say)
	}
	return r
}

// Doctor is `doctor --json`.
type Doctor struct {
	Checks   []airlock.Check `json:"checks"`
	StateDir string          `json:"state_dir"`
}

// Verify is `receipt verify FILE|ID --json`.
type Verify struct {
	Chain   string          `json:"chain,omitempty"` // only when read from a base's receipt chain
	Error   string          `json:"error,omitempty"` // only when invalid
	Path    string          `json:"path"`
	Receipt json.RawMessage `json:"receipt,omitempty"` // only when valid: as the file holds it
	Signer  string          `json:"signer,omitempty"`  // only when signed and valid: the principal and key
	Valid   bool            `json:"valid"`
}

// Init is `init claude|codex --json`.
type Init struct {
	Added   []string `json:"added"`
	Agent   string   `json:"agent"`
	Path    string   `json:"path"`
	Updated []string `json:"updated"`
}
