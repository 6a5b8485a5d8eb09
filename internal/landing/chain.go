package landing

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/airlockdev/airlock/internal/receipt"
)

// NotesOf lists the notes under a notes commit: annotated commit → note
// blob. A notes tree may fan out (ab/cdef…): the path less its slashes is
// the commit.
func (l *Repo) NotesOf(ctx context.Context, notes string) (map[string]string, error) {
	out := map[string]string{}
	if notes == "" {
		return out, nil
	}
	b, err := l.Git.Run(ctx, "ls-tree", "-r", "-z", "--full-tree", notes)
	if err != nil {
		return nil, fmt.Errorf("read the receipt notes %.12s: %w", notes, err)
	}
	for _, rec := range bytes.Split(b, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) == 3 && f[1] == "blob" {
			out[strings.ReplaceAll(string(path), "/", "")] = f[2]
		}
	}
	return out, nil
}

// ChainHead is the digest of the receipt of the newest commit on head's
// first-parent history that carries one: the previous link of a new
// landing's receipt.
func (l *Repo) ChainHead(ctx context.Context, head, notes string) (string, error) {
	ns, err := l.NotesOf(ctx, notes)
	if err != nil || len(ns) == 0 {
		return "", err
	}
	b, err := l.Git.Run(ctx, "rev-list", "--first-parent", head, "--")
	if err != nil {
		return "", fmt.Errorf("walk %s: %w", l.Ref, err)
	}
	for _, c := range strings.Fields(string(b)) {
		blob, ok := ns[c]
		if !ok {
			continue
		}
		data, err := l.Git.Run(ctx, "cat-file", "blob", blob)
		if err != nil {
			return "", fmt.Errorf("read the receipt note of %s: %w", c, err)
		}
		rc, err := receipt.Verify(data)
		if err != nil {
			return "", &UnverifiedNoteError{Commit: c, Ref: l.Ref, Remote: l.Remote, Err: err}
		}
		return rc.Digest, nil
	}
	return "", nil
}

// UnverifiedNoteError: the receipt note of the newest commit on the
// branch that carries one does not verify, so a new landing cannot chain
// to it. The receipt chain on the branch (Chain) says more.
type UnverifiedNoteError struct {
	Commit, Ref, Remote string
	Err                 error
}

// Branch is the branch the note is on.
func (e *UnverifiedNoteError) Branch() string { return strings.TrimPrefix(e.Ref, "refs/heads/") }

func (e *UnverifiedNoteError) Error() string {
	return fmt.Sprintf("the receipt note of commit %s on %s does not verify (%v): a new landing will not chain to it", e.Commit, e.Ref, e.Err)
}

func (e *UnverifiedNoteError) Unwrap() error { return e.Err }

// Chain is what was landed into a branch, newest first, as its receipt
// notes prove it.
type Chain struct {
	Entries []Entry
	// Broken, when set, says where the chain could not be verified: the
	// entries stop there.
	Broken string
	// Unreceipted are the commits between (and after) the landings that
	// carry no receipt, newest first.
	Unreceipted []Unreceipted
}

// Entry is one landed commit and its verified receipt.
type Entry struct {
	Commit  string
	Receipt *receipt.Receipt
	Data    []byte // the receipt note as it is, for its signature
}

// Unreceipted is a commit on the branch's first-parent history that no
// landing made (it carries no Airlock-Tx trailer), newer than the oldest
// landing.
type Unreceipted struct {
	Commit, Subject string
	newer           int // how many landings are newer
}

// WalkChain verifies the landings on head's first-parent history, with
// the receipt notes under the notes commit, stopping where the chain
// breaks.
func (l *Repo) WalkChain(ctx context.Context, head, notes string) (*Chain, error) {
	lg := &Chain{}
	ns, err := l.NotesOf(ctx, notes)
	if err != nil {
		return nil, err
	}
	b, err := l.Git.Run(ctx, "log", "--first-parent", "--format=%H%x00%P%x00%s%x00%(trailers:key="+TxTrailer+",valueonly,separator=%x00)", head, "--")
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", l.Ref, err)
	}
	type landed struct{ commit, parents, tx string }
	var commits []landed
	var plain []Unreceipted // commits without the trailer, newest first
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) < 4 {
			continue
		}
		if f[3] == "" {
			plain = append(plain, Unreceipted{Commit: f[0], Subject: f[2], newer: len(commits)})
			continue
		}
		if len(f) > 4 && f[4] != "" {
			lg.Broken = fmt.Sprintf("commit %s carries %d %s trailers; a landed commit carries one", f[0], len(f)-3, TxTrailer)
			return lg, nil
		}
		commits = append(commits, landed{f[0], f[1], f[3]})
	}
	// Commits no landing made, newer than the oldest landing: a human's
	// merge or push between landings is normal, but it is named, so that
	// no one reads the chain as covering the whole branch.
	for _, u := range plain {
		if u.newer < len(commits) {
			lg.Unreceipted = append(lg.Unreceipted, u)
		}
	}
	blobs := make([]string, 0, len(commits))
	for _, c := range commits {
		if blob, ok := ns[c.commit]; ok {
			blobs = append(blobs, blob)
		}
	}
	contents, err := l.catBlobs(ctx, blobs)
	if err != nil {
		return nil, err
	}
	for i, c := range commits {
		blob, ok := ns[c.commit]
		if !ok {
			lg.Broken = fmt.Sprintf("commit %s (transaction %s) has no receipt note in %s", c.commit, c.tx, NotesRef)
			return lg, nil
		}
		rc, err := receipt.Verify(contents[blob])
		if err != nil {
			lg.Broken = fmt.Sprintf("the receipt note of commit %s does not verify: %v", c.commit, err)
			return lg, nil
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
			return lg, nil
		}
		if why, err := l.treeBinding(ctx, c.commit, c.parents, rc); err != nil {
			return nil, err
		} else if why != "" {
			lg.Broken = fmt.Sprintf("commit %s (transaction %s): %s", c.commit, c.tx, why)
			return lg, nil
		}
		lg.Entries = append(lg.Entries, Entry{Commit: c.commit, Receipt: rc, Data: contents[blob]})
	}
	if n := len(lg.Entries); n > 0 && lg.Entries[n-1].Receipt.Previous != "" {
		lg.Broken = fmt.Sprintf("the receipt of commit %s, the oldest airlock commit on %s, names previous %s, which no commit before it carries", lg.Entries[n-1].Commit, l.Ref, lg.Entries[n-1].Receipt.Previous)
		return lg, nil
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
		return nil, err
	}
	for i, commit := range otherCommits {
		rc, err := receipt.Verify(rest[others[i]])
		if err != nil || rc.LandedBranch != l.Ref || rc.LandedCommit != commit {
			continue
		}
		lg.Broken = fmt.Sprintf("commit %s (transaction %s) landed on %s, its receipt note says, but it is not on %s's first-parent history any more: the branch was rewound or rewritten past it", commit, rc.TxID, l.Ref, l.Ref)
		return lg, nil
	}
	return lg, nil
}

// catBlobs reads blobs in one git process.
func (l *Repo) catBlobs(ctx context.Context, oids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(oids) == 0 {
		return out, nil
	}
	b, err := l.Git.RunInput(ctx, []byte(strings.Join(oids, "\n")+"\n"), "cat-file", "--batch")
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

// treeBinding checks that a landed commit is the change its receipt
// describes: one parent, and its tree against that parent (git diff-tree,
// no rename detection) hashes to the receipt's base_digest and
// result_digest as EntriesGitDigest forms them — every path the commit
// changed, merged paths included, as the parent and the commit hold it.
// It returns why not, or "".
func (l *Repo) treeBinding(ctx context.Context, commit, parents string, rc *receipt.Receipt) (string, error) {
	ps := strings.Fields(parents)
	if len(ps) != 1 {
		return fmt.Sprintf("it has %d parents, but a landing makes a commit with one (the head it landed on)", len(ps)), nil
	}
	b, err := l.Git.Run(ctx, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", "--no-ext-diff", ps[0], commit)
	if err != nil {
		return "", fmt.Errorf("diff landed commit %s against its parent: %w", commit, err)
	}
	var paths []string
	var before, after []TreeEntry
	entry := func(mode, oid string) TreeEntry {
		if strings.Trim(mode, "0") == "" {
			return TreeEntry{}
		}
		return TreeEntry{Mode: mode, OID: oid}
	}
	recs := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	for i := 0; i+1 < len(recs); i += 2 {
		f := strings.Fields(strings.TrimPrefix(recs[i], ":"))
		if len(f) != 5 {
			return "", fmt.Errorf("diff landed commit %s against its parent: git diff-tree said %q", commit, recs[i])
		}
		paths = append(paths, recs[i+1])
		before = append(before, entry(f[0], f[2]))
		after = append(after, entry(f[1], f[3]))
	}
	if got := EntriesGitDigest(paths, after); got != rc.ResultDigest {
		return fmt.Sprintf("its tree does not match its receipt's change set: the %d paths it changed against %.12s hash to %s, the receipt's result_digest is %s", len(paths), ps[0], got, rc.ResultDigest), nil
	}
	if got := EntriesGitDigest(paths, before); got != rc.BaseDigest {
		return fmt.Sprintf("its parent %.12s does not match its receipt's change set: the %d paths it changed hash to %s there, the receipt's base_digest is %s", ps[0], len(paths), got, rc.BaseDigest), nil
	}
	return "", nil
}
