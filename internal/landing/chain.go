package landing

import (
	"bytes"
	"context"
	"fmt"
	"path"
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
	b, err := l.Git.Run(ctx, "log", "--first-parent", "--format=%H%x00%T%x00%P%x00%s%x00%(trailers:key="+TxTrailer+",valueonly,separator=%x00)", head, "--")
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", l.Ref, err)
	}
	type landed struct {
		commit, parents, tx string
		at                  int // its place on the first-parent line, 0 the head
	}
	var commits []landed
	var plain []Unreceipted // commits without the trailer, newest first
	// newest is, per tree, the newest place on the first-parent line of a
	// commit holding it: a batch receipt's batch_tree must be the tree of
	// a commit at or after its own (newest at most its place).
	newest := map[string]int{}
	at := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) < 5 {
			continue
		}
		if _, ok := newest[f[1]]; !ok {
			newest[f[1]] = at
		}
		at++
		if f[4] == "" {
			plain = append(plain, Unreceipted{Commit: f[0], Subject: f[3], newer: len(commits)})
			continue
		}
		if len(f) > 5 && f[5] != "" {
			lg.Broken = fmt.Sprintf("commit %s carries %d %s trailers; a landed commit carries one", f[0], len(f)-4, TxTrailer)
			return lg, nil
		}
		commits = append(commits, landed{f[0], f[2], f[4], at - 1})
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
		if rc.Validated == receipt.ValidatedBatch {
			if n, ok := newest[rc.BatchTree]; !ok || n > c.at {
				lg.Broken = fmt.Sprintf("the receipt of commit %s (transaction %s) says its validators ran on batch_tree %s, which no commit at or after it on %s holds: the batch that landed it did not end on that tree", c.commit, c.tx, rc.BatchTree, l.Ref)
				return lg, nil
			}
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
// changed, merged paths included, as the parent and the commit hold it;
// and its counts account for those paths (countsCover). It returns why
// not, or "".
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
	var status []byte
	recs := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	for i := 0; i+1 < len(recs); i += 2 {
		f := strings.Fields(strings.TrimPrefix(recs[i], ":"))
		if len(f) != 5 {
			return "", fmt.Errorf("diff landed commit %s against its parent: git diff-tree said %q", commit, recs[i])
		}
		paths = append(paths, recs[i+1])
		before = append(before, entry(f[0], f[2]))
		after = append(after, entry(f[1], f[3]))
		status = append(status, f[4][0])
	}
	if got := EntriesGitDigest(paths, after); got != rc.ResultDigest {
		return fmt.Sprintf("its tree does not match its receipt's change set: the %d paths it changed against %.12s hash to %s, the receipt's result_digest is %s", len(paths), ps[0], got, rc.ResultDigest), nil
	}
	if got := EntriesGitDigest(paths, before); got != rc.BaseDigest {
		return fmt.Sprintf("its parent %.12s does not match its receipt's change set: the %d paths it changed hash to %s there, the receipt's base_digest is %s", ps[0], len(paths), got, rc.BaseDigest), nil
	}
	return countsCover(paths, status, rc), nil
}

// The kinds of path a landed commit changes, as its receipt's counts
// must account for them: each needs one change of the change set at
// that path, of an op that could have made it (see countsCover).
const (
	diffAdded        = iota // added where the parent held nothing: an add
	diffAddedOverDir        // added where the parent held a directory: an add, or a directory made a file (a modify)
	diffRemoved             // a delete, or a file made a directory (a modify)
	diffChanged             // a modify
	diffKinds
)

// countsCover checks that a receipt's added, modified and deleted can
// account for the paths its commit changed (paths, with git diff-tree's
// status letters): each such path is one change of the change set, so
// the counts must hold one change of a fitting op per path. The counts
// may say more than the commit shows — a change git does not see (an
// empty directory, a permission bit git ignores, a path git ignores, one
// the head already held) is counted and not committed — never less, and
// never of the wrong op. It returns why not, or "".
func countsCover(paths []string, status []byte, rc *receipt.Receipt) string {
	// A path added over a directory takes that directory's files out:
	// diff-tree lists them removed under it.
	removedUnder := map[string]bool{}
	for i, p := range paths {
		if status[i] == 'D' {
			for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
				removedUnder[d] = true
			}
		}
	}
	var need [diffKinds]int
	for i, p := range paths {
		switch status[i] {
		case 'A':
			if removedUnder[p] {
				need[diffAddedOverDir]++
			} else {
				need[diffAdded]++
			}
		case 'D':
			need[diffRemoved]++
		default: // M, T: the path is there on both sides
			need[diffChanged]++
		}
	}
	const (
		add = 1 << iota
		mod
		del
	)
	fits := [diffKinds]int{diffAdded: add, diffAddedOverDir: add | mod, diffRemoved: del | mod, diffChanged: mod}
	have := map[int]int{add: rc.Added, mod: rc.Modified, del: rc.Deleted}
	// Hall's condition: every set of kinds needs no more changes than
	// the ops that fit any of them hold.
	for set := 1; set < 1<<diffKinds; set++ {
		demand, ops := 0, 0
		for k := range diffKinds {
			if set&(1<<k) != 0 {
				demand += need[k]
				ops |= fits[k]
			}
		}
		supply := 0
		for op, n := range have {
			if ops&op != 0 {
				supply += n
			}
		}
		if demand > supply {
			return fmt.Sprintf("its receipt's counts (+%d ~%d -%d) cannot account for the %d paths it changed against its parent (%d added, %d added over a directory, %d removed, %d modified), each of which is one change of its change set", rc.Added, rc.Modified, rc.Deleted, len(paths), need[diffAdded], need[diffAddedOverDir], need[diffRemoved], need[diffChanged])
		}
	}
	return ""
}
