package airlock

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/receipt"
)

// RemoteLogOptions name the branch whose landings RemoteLog lists.
type RemoteLogOptions struct {
	// Dir is a directory in the repository whose remotes Remote may name
	// ("" means the current directory); outside a repository Remote must
	// be a URL.
	Dir    string
	Remote string
	Branch string
}

// RemoteEntry is one landed commit and its receipt.
type RemoteEntry struct {
	Commit  string
	Receipt *Receipt
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
	ref, err := branchRef(ctx, o.Branch)
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
	fetchURL, pushURL, err := resolveRemote(ctx, inRepo, o.Remote)
	if err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "airlock-remote-log-")
	if err != nil {
		return nil, fmt.Errorf("make a scratch repository: %w", err)
	}
	defer os.RemoveAll(scratch)
	repoDir := scratch + "/repo.git"
	if err := initPrivate(ctx, repoDir, inRepo); err != nil {
		return nil, err
	}
	l := &landing{repo: git.At(repoDir), dir: repoDir, remote: redact(o.Remote), fetch: fetchURL, push: pushURL, ref: ref, baseDir: dir}
	head, notes, err := l.fetchHeads(ctx)
	if err != nil {
		return nil, err
	}
	out := &RemoteLog{Remote: l.remote, Branch: ref, Head: head}
	return out, l.walkChain(ctx, head, notes, out)
}

// walkChain fills lg with the verified landings on head's first-parent
// history, stopping where the chain breaks.
func (l *landing) walkChain(ctx context.Context, head, notes string, lg *RemoteLog) error {
	ns, err := l.notesOf(ctx, notes)
	if err != nil {
		return err
	}
	b, err := l.repo.Run(ctx, "log", "--first-parent", "--format=%H%x00%(trailers:key="+TxTrailer+",valueonly,separator=%x00)", head, "--")
	if err != nil {
		return fmt.Errorf("walk %s: %w", l.ref, err)
	}
	type landed struct{ commit, tx string }
	var commits []landed
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) < 2 || f[1] == "" {
			continue
		}
		if len(f) > 2 && f[2] != "" {
			lg.Broken = fmt.Sprintf("commit %s carries %d %s trailers; a landed commit carries one", f[0], len(f)-1, TxTrailer)
			return nil
		}
		commits = append(commits, landed{f[0], f[1]})
	}
	blobs := make([]string, 0, len(commits))
	for _, c := range commits {
		if blob, ok := ns[c.commit]; ok {
			blobs = append(blobs, blob)
		}
	}
	contents, err := l.catBlobs(ctx, blobs)
	if err != nil {
		return err
	}
	for i, c := range commits {
		blob, ok := ns[c.commit]
		if !ok {
			lg.Broken = fmt.Sprintf("commit %s (transaction %s) has no receipt note in %s", c.commit, c.tx, NotesRef)
			return nil
		}
		rc, err := receipt.Verify(contents[blob])
		if err != nil {
			lg.Broken = fmt.Sprintf("the receipt note of commit %s does not verify: %v", c.commit, err)
			return nil
		}
		switch {
		case rc.TxID != c.tx:
			lg.Broken = fmt.Sprintf("the receipt note of commit %s is transaction %s's, but the commit holds %s", c.commit, rc.TxID, c.tx)
		case rc.LandedCommit != c.commit:
			lg.Broken = fmt.Sprintf("the receipt note of commit %s says it landed as %q", c.commit, rc.LandedCommit)
		case i > 0 && lg.Entries[i-1].Receipt.Previous != rc.Digest:
			lg.Broken = fmt.Sprintf("the receipt of commit %s names previous %s, but the airlock commit before it (%s) has receipt %s", commits[i-1].commit, lg.Entries[i-1].Receipt.Previous, c.commit, rc.Digest)
		}
		if lg.Broken != "" {
			return nil
		}
		lg.Entries = append(lg.Entries, RemoteEntry{Commit: c.commit, Receipt: publicReceipt(rc)})
	}
	if n := len(lg.Entries); n > 0 && lg.Entries[n-1].Receipt.Previous != "" {
		lg.Broken = fmt.Sprintf("the receipt of commit %s, the oldest airlock commit on %s, names previous %s, which no commit before it carries", lg.Entries[n-1].Commit, l.ref, lg.Entries[n-1].Receipt.Previous)
		return nil
	}
	// A landing the notes hold for this branch but the branch does not:
	// the branch was rewound or rewritten past it (a truncated chain
	// verifies on its own, so the notes are asked).
	on := map[string]bool{}
	for _, c := range commits {
		on[c.commit] = true
	}
	var others, otherCommits []string
	for commit := range ns {
		if !on[commit] {
			otherCommits = append(otherCommits, commit)
		}
	}
	slices.Sort(otherCommits)
	for _, commit := range otherCommits {
		others = append(others, ns[commit])
	}
	rest, err := l.catBlobs(ctx, others)
	if err != nil {
		return err
	}
	for i, commit := range otherCommits {
		rc, err := receipt.Verify(rest[others[i]])
		if err != nil || rc.LandedBranch != l.ref || rc.LandedCommit != commit {
			continue
		}
		lg.Broken = fmt.Sprintf("commit %s (transaction %s) landed on %s, its receipt note says, but it is not on %s's first-parent history any more: the branch was rewound or rewritten past it", commit, rc.TxID, l.ref, l.ref)
		return nil
	}
	return nil
}

// catBlobs reads blobs in one git process.
func (l *landing) catBlobs(ctx context.Context, oids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(oids) == 0 {
		return out, nil
	}
	b, err := l.repo.RunInput(ctx, []byte(strings.Join(oids, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("read the receipt notes: %w", err)
	}
	for len(b) > 0 {
		hdr, rest, ok := bytes.Cut(b, []byte{'\n'})
		if !ok {
			break
		}
		f := strings.Fields(string(hdr))
		if len(f) != 3 {
			// "<oid> missing": a note whose blob the fetch did not bring.
			b = rest
			continue
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n+1 > len(rest) {
			return nil, fmt.Errorf("read the receipt notes: git cat-file said %q", hdr)
		}
		out[f[0]] = rest[:n]
		b = rest[n+1:]
	}
	return out, nil
}
