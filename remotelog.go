package airlock

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/landing"
)

// RemoteLogOptions name the branch whose landings RemoteLog lists.
type RemoteLogOptions struct {
	// Dir is a directory in the repository whose remotes Remote may name
	// ("" means the current directory); outside a repository Remote must
	// be a URL.
	Dir    string
	Remote string
	Branch string
	// Limits bound each git call against the remote; a remote that
	// times out is a *RemoteTimeoutError.
	Limits RemoteLimits
	// AllowedSigners is the allowed signers file signed receipts are
	// checked against; "" means gpg.ssh.allowedSignersFile as git reads
	// it in Dir.
	AllowedSigners string
}

// RemoteEntry is one landed commit and its receipt.
type RemoteEntry struct {
	Commit  string
	Receipt *Receipt
	// Signer names who signed the receipt, checked against the allowed
	// signers ("" when it is unsigned).
	Signer string
}

// UnreceiptedCommit is a commit on the branch's first-parent history,
// newer than its oldest landing, that no landing made.
type UnreceiptedCommit struct {
	Commit, Subject string
}

// RemoteLog is what was landed into a remote branch, newest first, read
// from the branch and its receipt notes alone.
type RemoteLog struct {
	Remote string // as given (a password in a URL is masked)
	Branch string // refs/heads/...
	Head   string // the branch head the walk started at
	// Entries are the commits carrying an Airlock-Tx trailer on the
	// branch's first-parent history, each with its verified receipt.
	Entries []RemoteEntry
	// Broken, when set, says where the chain could not be verified: the
	// entries stop there.
	Broken string
	// Unreceipted are the commits between (and after) the landings that
	// carry no receipt, newest first: not an error (a person's merge is
	// normal), but no receipt vouches for them.
	Unreceipted []UnreceiptedCommit
}

// Unsigned are the entries whose receipts carry no signature.
func (lg *RemoteLog) Unsigned() []RemoteEntry {
	var out []RemoteEntry
	for _, e := range lg.Entries {
		if e.Signer == "" {
			out = append(out, e)
		}
	}
	return out
}

// RemoteLog fetches a remote branch and its receipt notes into a scratch
// repository and verifies the chain: every commit on the branch's
// first-parent history that carries the Airlock-Tx trailer must have a
// note that verifies as a receipt of that transaction landed as that
// commit, and each receipt's previous must be the digest of the receipt of
// the airlock commit before it (the oldest: none). It needs nothing but
// git and the remote: any host that can fetch the branch can check it.
func (s *Store) RemoteLog(ctx context.Context, o RemoteLogOptions) (_ *RemoteLog, err error) {
	defer exported(&err)
	ref, err := landing.BranchRef(ctx, o.Branch)
	if err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	inRepo := dir
	if _, err := git.In(dir).Run(ctx, "rev-parse", "--git-dir"); err != nil {
		inRepo = ""
	}
	scratch, err := os.MkdirTemp("", "airlock-remote-log-")
	if err != nil {
		return nil, fmt.Errorf("make a scratch repository: %w", err)
	}
	defer os.RemoveAll(scratch)
	l, err := landing.Open(ctx, scratch+"/repo.git", inRepo, dir, o.Remote, ref)
	if err != nil {
		return nil, err
	}
	l.Bounds = o.Limits.bounds()
	head, notes, err := l.FetchHeads(ctx)
	if err != nil {
		return nil, remoteTimeout(err)
	}
	out := &RemoteLog{Remote: l.Remote, Branch: ref, Head: head}
	chain, err := l.WalkChain(ctx, head, notes)
	if err != nil {
		return out, err
	}
	out.Broken = chain.Broken
	for _, u := range chain.Unreceipted {
		out.Unreceipted = append(out.Unreceipted, UnreceiptedCommit{Commit: u.Commit, Subject: u.Subject})
	}
	var rs []signedReceipt
	for _, e := range chain.Entries {
		rs = append(rs, signedReceipt{data: e.Data, rc: e.Receipt})
	}
	var checks []SignatureCheck
	if slices.ContainsFunc(rs, func(r signedReceipt) bool { return r.rc.Signature != "" }) {
		cfg, err := signatureConfig(ctx, dir, o.AllowedSigners)
		if err != nil {
			return out, err
		}
		if checks, err = checkSignatures(ctx, cfg, rs); err != nil {
			return out, err
		}
	}
	for i, e := range chain.Entries {
		var sc SignatureCheck
		if checks != nil {
			sc = checks[i]
		}
		if sc.Err != nil {
			// The entries stop at a receipt whose signature does not
			// check, as at any other break.
			out.Broken = fmt.Sprintf("the receipt of commit %s (transaction %s) is not signed by an allowed signer: %v", e.Commit, e.Receipt.TxID, sc.Err)
			break
		}
		out.Entries = append(out.Entries, RemoteEntry{Commit: e.Commit, Receipt: publicReceipt(e.Receipt), Signer: sc.Signer})
	}
	return out, nil
}
