package airlock

import (
	"time"

	"github.com/airlockdev/airlock/internal/receipt"
)

// Receipt is the record of a settled transaction. Its JSON form is the
// receipt file's (schema airlock.receipt/v1, docs/json.md), which `airlock
// receipt verify` checks; Digest seals every other member.
type Receipt struct {
	Schema     string // "airlock.receipt/v1"
	TxID       string // the transaction id
	Base       string // absolute path of the base
	BaseDevice uint64 // device of the base directory at open
	BaseInode  uint64 // inode of the base directory at open
	// BaseFS names the base's file system as it survives a reboot
	// (fsid-…, uuid-…; dev-… where only the device number is known);
	// empty in receipts of earlier versions.
	BaseFS             string
	Backend            string    // how the staged workspace was made
	Command            []string  // argv; empty when no command ran
	StartedAt          time.Time // UTC
	EndedAt            time.Time // UTC
	ExitCode           *int      // nil when no command ran
	Outcome            string    // committed, discarded, refused or no_changes
	Refusal            string    // the RefusalKind when Outcome is refused, else ""
	RefusedPaths       []string  // paths the refusal names
	Added              int
	Modified           int
	Deleted            int
	ExcludedSelectors  int
	ProtectedSelectors int
	Approved           bool     // whether approval for protected paths was given
	BaseDigest         string   // "sha256:<hex>" of the base at open
	ResultDigest       string   // "sha256:<hex>" of the base after settling
	DiffDigest         string   // "sha256:<hex>" of the change set
	NotTransactional   []string // what no transaction covers (see NotTransactional)
	Previous           string   // Digest of the receipt committed to the same base before this one; "" for the first
	// Branch and BranchHead: the git branch a worktree transaction kept
	// its own commits on, and the commit it named at settle; both or
	// neither.
	Branch     string
	BranchHead string
	// Validators are the validate commands that ran on the candidate
	// tree, in order; after a ValidationFailed refusal the last one failed.
	Validators []string
	// LandedBranch and LandedCommit: the branch of a git remote the
	// transaction was landed into (refs/heads/...) and the commit the
	// landing made there; both or neither (Store.LandRemote).
	LandedBranch string
	LandedCommit string
	// Merged are the paths a commit three-way merged with the base's own
	// changes since open; only in a committed receipt, when it merged.
	Merged []string
	// Validated says how a landing into a remote was validated: "alone"
	// (on the landed commit's own tree) or "batch" (once, on BatchTree,
	// the tree of the last commit of the batch it landed in); only in a
	// landed receipt whose validators ran.
	Validated string
	BatchTree string
	// Undoes names the transaction whose commit this one reverts: only
	// in an undo's receipt.
	Undoes string
	// Signature is the armored SSH signature (namespace airlock-receipt)
	// over the receipt's signed bytes; "" when unsigned.
	Signature string
	// PartOf and Paths: a partial commit's (CommitOptions.Paths) — the
	// transaction it took part of, open with the rest, and the changed
	// paths it landed, sorted; both or neither.
	PartOf string
	Paths  []string
	Digest string
}

// The conversions below are type changes, not copies: Receipt has the
// internal receipt's fields exactly, which the compiler checks.

func publicReceipt(r *receipt.Receipt) *Receipt { return (*Receipt)(r) }

func (r Receipt) MarshalJSON() ([]byte, error) { return receipt.Receipt(r).MarshalJSON() }

// UnmarshalJSON reads a receipt without verifying it.
func (r *Receipt) UnmarshalJSON(data []byte) error {
	return (*receipt.Receipt)(r).UnmarshalJSON(data)
}
