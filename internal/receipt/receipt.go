package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
)

// Schema names the receipt format this package writes and reads.
const Schema = "airlock.receipt/v1"

// NotTransactional is the disclaimer every receipt carries: effects a
// transaction cannot hold back or undo.
var NotTransactional = []string{"network", "databases", "processes", "outside_surface"}

// Outcomes are the ways a transaction settles.
var Outcomes = []string{"committed", "discarded", "refused", "no_changes"}

// RefusalKinds are the refusal kinds of docs/reference.md, the values a refused receipt's
// refusal may take.
var RefusalKinds = []string{
	"BaseDrift", "MergeConflict", "ProtectedPathNotApproved", "BoundaryEscape",
	"SharedInode", "UnsupportedEntry", "ValidationFailed", "ApplyFailed", "InterruptedApply",
	"StagedChanged",
	"ReviewStale",
	"RemoteMoved",
	"Conflicted",
	"RemoteTimeout",
}

// Receipt is the record of one settled transaction. Its JSON form (see the
// package documentation) is what Seal writes and Verify reads; Receipt's
// own MarshalJSON and UnmarshalJSON use the same form.
type Receipt struct {
	Schema     string // Schema; Seal fills it in when empty
	TxID       string // the transaction id
	Base       string // absolute path of the base
	BaseDevice uint64 // device of the base directory at open
	BaseInode  uint64 // inode of the base directory at open
	// BaseFS names the base's file system in a form that survives a
	// reboot where it has one (fsid-…, uuid-…; dev-… where only the device
	// number is known). Optional: absent in receipts of earlier versions.
	BaseFS             string
	Backend            string    // how the staged workspace was made
	Command            []string  // argv; empty when no command ran
	StartedAt          time.Time // written in UTC
	EndedAt            time.Time // written in UTC
	ExitCode           *int      // nil when no command ran
	Outcome            string    // one of Outcomes
	Refusal            string    // one of RefusalKinds when Outcome is "refused", else ""
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
	NotTransactional   []string // Seal fills in the package's list when empty
	Previous           string   // digest of the receipt committed to the same base before this one; "" for the first
	// Branch and BranchHead name the git branch a worktree transaction
	// kept its own commits on (airlock/<id>) and the commit it pointed at
	// when the transaction settled. Optional: only worktree transactions
	// carry them, both or neither.
	Branch     string
	BranchHead string
	// Validators are the validate commands the settle ran on the
	// candidate tree, in the order they ran: the project's first, then the
	// one the caller added; the last of a ValidationFailed refusal is the
	// one that failed. Optional: absent when none ran.
	Validators []string
	// LandedBranch and LandedCommit name the branch of a git remote a
	// transaction was landed into (refs/heads/...) and the commit the
	// landing made there. Optional: only a landing into a remote carries
	// them, both or neither; the receipt is then the note that commit
	// carries in refs/notes/airlock, and Previous is the receipt of the
	// airlock commit before it on that branch.
	LandedBranch string
	LandedCommit string
	// Merged are the paths a commit three-way merged: the base had
	// changed them since open too, and what landed combines both sides.
	// Optional: absent unless a committed receipt merged some.
	Merged []string
	// Validated says how a landing into a remote was validated: "alone"
	// (the validators ran on the landed commit's own tree) or "batch"
	// (they ran once on BatchTree, the tree of the last commit of the
	// batch it landed in, which holds this commit's change and those of
	// the batch's earlier commits). Optional: only a landed receipt whose
	// validators ran carries it.
	Validated string
	BatchTree string
	// Undoes names the transaction whose commit this one reverts (an
	// `airlock undo`). Optional: only an undo's receipt carries it.
	Undoes string
	// Signature is an armored SSH signature (SSHSIG, namespace
	// airlock-receipt) over SignedBytes: who sealed the receipt, where
	// the digest only says it was not edited. Optional: absent in an
	// unsigned receipt.
	Signature string
	// PartOf and Paths say a commit was partial (`airlock commit ID --
	// PATH...`): PartOf is the transaction it took part of, which stays
	// open with the rest, and Paths the changed paths it landed, sorted.
	// Optional: only a partial commit's receipt carries them, both or
	// neither.
	PartOf string
	Paths  []string
	Digest string // set by Seal
}

// wire is a receipt's JSON form. Its member order is the file's reading
// order; the digest does not depend on it.
type wire struct {
	Schema             string      `json:"schema"`
	TxID               string      `json:"tx"`
	Base               fileBytes   `json:"base"`
	BaseDevice         uint64      `json:"base_device"`
	BaseInode          uint64      `json:"base_inode"`
	BaseFS             string      `json:"base_fs,omitempty"`
	Backend            string      `json:"backend"`
	Command            []fileBytes `json:"command"`
	StartedAt          string      `json:"started_at"`
	EndedAt            string      `json:"ended_at"`
	ExitCode           *int        `json:"exit_code"`
	Outcome            string      `json:"outcome"`
	Refusal            string      `json:"refusal"`
	RefusedPaths       []fileBytes `json:"refused_paths"`
	Added              int         `json:"added"`
	Modified           int         `json:"modified"`
	Deleted            int         `json:"deleted"`
	ExcludedSelectors  int         `json:"excluded_selectors"`
	ProtectedSelectors int         `json:"protected_selectors"`
	Approved           bool        `json:"approved"`
	BaseDigest         string      `json:"base_digest"`
	ResultDigest       string      `json:"result_digest"`
	DiffDigest         string      `json:"diff_digest"`
	NotTransactional   []string    `json:"not_transactional"`
	Previous           string      `json:"previous"`
	Branch             string      `json:"branch,omitempty"`
	BranchHead         string      `json:"branch_head,omitempty"`
	Validators         []fileBytes `json:"validators,omitempty"`
	Merged             []fileBytes `json:"merged,omitempty"`
	LandedBranch       string      `json:"landed_branch,omitempty"`
	LandedCommit       string      `json:"landed_commit,omitempty"`
	Validated          string      `json:"validated,omitempty"`
	BatchTree          string      `json:"batch_tree,omitempty"`
	Undoes             string      `json:"undoes,omitempty"`
	PartOf             string      `json:"part_of,omitempty"`
	Paths              []fileBytes `json:"paths,omitempty"`
	Signature          string      `json:"signature,omitempty"`
	Digest             string      `json:"digest"`
}

// fileBytes is manifest.Bytes as a receipt writes it: the same JSON forms,
// but without encoding/json's HTML escaping, so that a command such as
// "make && make test" reads as itself in the file.
type fileBytes manifest.Bytes

func (b fileBytes) MarshalJSON() ([]byte, error) {
	if !utf8.ValidString(string(b)) {
		return manifest.Bytes(b).MarshalJSON()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(b)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func (b *fileBytes) UnmarshalJSON(data []byte) error {
	return (*manifest.Bytes)(b).UnmarshalJSON(data)
}

func toFile(list []string) []fileBytes {
	// Empty lists are written as [] rather than null, so that a reader
	// never has to tell "none" from "missing".
	out := make([]fileBytes, len(list))
	for i, b := range list {
		out[i] = fileBytes(b)
	}
	return out
}

func fromFile(list []fileBytes) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, b := range list {
		out[i] = string(b)
	}
	return out
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (r *Receipt) toWire() wire {
	nt := r.NotTransactional
	if nt == nil {
		nt = []string{}
	}
	return wire{
		Schema: r.Schema, TxID: r.TxID, Base: fileBytes(r.Base), BaseDevice: r.BaseDevice, BaseInode: r.BaseInode,
		BaseFS: r.BaseFS, Backend: r.Backend, Command: toFile(r.Command),
		StartedAt: formatTime(r.StartedAt), EndedAt: formatTime(r.EndedAt), ExitCode: r.ExitCode,
		Outcome: r.Outcome, Refusal: r.Refusal, RefusedPaths: toFile(r.RefusedPaths),
		Added: r.Added, Modified: r.Modified, Deleted: r.Deleted,
		ExcludedSelectors: r.ExcludedSelectors, ProtectedSelectors: r.ProtectedSelectors, Approved: r.Approved,
		BaseDigest: r.BaseDigest, ResultDigest: r.ResultDigest, DiffDigest: r.DiffDigest,
		NotTransactional: nt, Previous: r.Previous, Branch: r.Branch, BranchHead: r.BranchHead,
		Validators: optionalFile(r.Validators), Merged: optionalFile(r.Merged),
		LandedBranch: r.LandedBranch, LandedCommit: r.LandedCommit, Undoes: r.Undoes, Signature: r.Signature, Digest: r.Digest,
		Validated: r.Validated, BatchTree: r.BatchTree,
		PartOf: r.PartOf, Paths: optionalFile(r.Paths),
	}
}

// optionalFile is toFile for a member that is left out when empty.
func optionalFile(list []string) []fileBytes {
	if len(list) == 0 {
		return nil
	}
	return toFile(list)
}

// MarshalJSON writes the receipt's file form (compact, without checking it;
// Seal is what makes a receipt whole).
func (r Receipt) MarshalJSON() ([]byte, error) {
	return json.Marshal(r.toWire())
}

// UnmarshalJSON reads a receipt without verifying it; use Verify for
// anything that was not just produced by this process.
func (r *Receipt) UnmarshalJSON(data []byte) error {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	started, err := time.Parse(time.RFC3339Nano, w.StartedAt)
	if err != nil {
		return fmt.Errorf("member \"started_at\": %w", err)
	}
	ended, err := time.Parse(time.RFC3339Nano, w.EndedAt)
	if err != nil {
		return fmt.Errorf("member \"ended_at\": %w", err)
	}
	*r = Receipt{
		Schema: w.Schema, TxID: w.TxID, Base: string(w.Base), BaseDevice: w.BaseDevice, BaseInode: w.BaseInode,
		BaseFS: w.BaseFS, Backend: w.Backend, Command: fromFile(w.Command),
		StartedAt: started.UTC(), EndedAt: ended.UTC(), ExitCode: w.ExitCode,
		Outcome: w.Outcome, Refusal: w.Refusal, RefusedPaths: fromFile(w.RefusedPaths),
		Added: w.Added, Modified: w.Modified, Deleted: w.Deleted,
		ExcludedSelectors: w.ExcludedSelectors, ProtectedSelectors: w.ProtectedSelectors, Approved: w.Approved,
		BaseDigest: w.BaseDigest, ResultDigest: w.ResultDigest, DiffDigest: w.DiffDigest,
		NotTransactional: w.NotTransactional, Previous: w.Previous, Branch: w.Branch, BranchHead: w.BranchHead,
		Validators: fromFile(w.Validators), Merged: fromFile(w.Merged),
		LandedBranch: w.LandedBranch, LandedCommit: w.LandedCommit, Undoes: w.Undoes, Signature: w.Signature, Digest: w.Digest,
		Validated: w.Validated, BatchTree: w.BatchTree,
		PartOf: w.PartOf, Paths: fromFile(w.Paths),
	}
	return nil
}

// Seal fills in Schema and NotTransactional when they are empty, computes
// and sets Digest, and returns the receipt file's bytes: indented JSON with
// a trailing newline. It refuses a receipt that Verify would refuse, saying
// which field is wrong, so that every sealed receipt verifies. The receipt
// is unsigned.
func (r *Receipt) Seal() ([]byte, error) { return r.SealSigned(nil) }

// SignFunc signs a receipt's SignedBytes and returns the armored SSH
// signature.
type SignFunc func(signed []byte) (string, error)

// SealSigned is Seal, then, when sign is not nil, sign over the receipt's
// SignedBytes, kept in the signature member. A signing that fails fails
// the seal: a receipt meant to be signed is never written unsigned.
func (r *Receipt) SealSigned(sign SignFunc) ([]byte, error) {
	if r.Schema == "" {
		r.Schema = Schema
	}
	if len(r.NotTransactional) == 0 {
		r.NotTransactional = slices.Clone(NotTransactional)
	}
	w := r.toWire()
	w.Digest, w.Signature = "", ""
	unsealed, err := encodeFile(w)
	if err != nil {
		return nil, fmt.Errorf("seal receipt of transaction %s: %w", r.TxID, err)
	}
	obj, err := parse(unsealed)
	if err != nil {
		return nil, fmt.Errorf("seal receipt of transaction %s: %w", r.TxID, err)
	}
	canon, err := signedBytes(obj)
	if err != nil {
		return nil, fmt.Errorf("seal receipt of transaction %s: %w", r.TxID, err)
	}
	sum := sha256.Sum256(canon)
	w.Digest = "sha256:" + hex.EncodeToString(sum[:])
	if sign != nil {
		if w.Signature, err = sign(canon); err != nil {
			return nil, fmt.Errorf("sign the receipt of transaction %s: %w", r.TxID, err)
		}
	}
	data, err := encodeFile(w)
	if err != nil {
		return nil, fmt.Errorf("seal receipt of transaction %s: %w", r.TxID, err)
	}
	if _, err := Verify(data); err != nil {
		return nil, fmt.Errorf("seal receipt of transaction %s: %w", r.TxID, err)
	}
	r.Digest, r.Signature = w.Digest, w.Signature
	return data, nil
}

func encodeFile(w wire) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// maxFile bounds what Load reads: a receipt lists refused paths, not the
// change set, so even a large one is far below this.
const maxFile = 64 << 20

// Load reads and verifies the receipt file at path, returning it and the
// file's bytes.
func Load(path string) (*Receipt, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read receipt: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("read receipt: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("read receipt %s: it is %s, not a regular file", path, safefs.TypeName(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read receipt: %w", err)
	}
	if len(data) > maxFile {
		return nil, nil, fmt.Errorf("read receipt %s: larger than %d MiB, so not a receipt", path, maxFile>>20)
	}
	r, err := Verify(data)
	if err != nil {
		return nil, nil, fmt.Errorf("receipt %s is invalid: %w", path, err)
	}
	return r, data, nil
}

// errInvalid marks every error Verify returns, for callers that want to
// tell a bad receipt from a failure to read one.
var errInvalid = errors.New("invalid receipt")

// IsInvalid reports whether err came from verification rather than from
// reading the file.
func IsInvalid(err error) bool { return errors.Is(err, errInvalid) }
