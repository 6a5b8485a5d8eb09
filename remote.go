package airlock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/gitbase"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/merge"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/safefs"
)

// DefaultRemoteAttempts is how many times a landing into a remote fetches,
// merges, validates and pushes before it refuses RemoteMoved, when
// RemoteOptions.Attempts is zero.
const DefaultRemoteAttempts = 6

// NotesRef is where the receipts of landings into a remote live: one note
// per landed commit, holding its receipt.
const NotesRef = "refs/notes/airlock"

// TxTrailer is the trailer every landed commit carries: the transaction it
// holds, which makes a second landing of it find the first.
const TxTrailer = "Airlock-Tx"

// RemoteOptions say where LandRemote lands.
type RemoteOptions struct {
	// Remote is a remote of the base's repository ("origin") or a URL git
	// accepts. Authentication is git's own (ssh keys, credential helpers);
	// airlock never prompts and stores nothing.
	Remote string
	// Branch is the branch to land into, without refs/heads/; it must
	// exist on the remote.
	Branch string
	// Attempts bounds how many times the remote may be found moved at the
	// push before the landing refuses RemoteMoved; 0 means
	// DefaultRemoteAttempts.
	Attempts int
	CommitOptions
}

// RemoteLanded is the outcome of one transaction in a LandRemote.
type RemoteLanded struct {
	ID string
	// Commit is the commit on the branch that holds the change set (set
	// when it landed, now or before).
	Commit string
	// Already is true when the transaction was on the branch before this
	// call: nothing was pushed.
	Already bool
	// Attempts is how many times the landing fetched and pushed.
	Attempts int
	Result   *Result // nil when the transaction could not be loaded or settled
	Err      error   // a *Refusal when it was refused
}

// LandRemote lands transactions, in the order given, into a branch of a
// git remote, never touching their bases' files: for each, it fetches the
// branch head H, builds the candidate commit (H plus the change set,
// three-way merged where H changed a path the transaction changed since
// the commit its base was at when it opened), runs the validators on that
// exact tree checked out in a throw-away directory, and pushes the commit
// together with its receipt (a note in refs/notes/airlock) in one atomic
// push whose expected old values are H and the notes head it fetched. A
// push that finds either moved starts over from the fetch, up to
// o.Attempts times. A refused transaction is kept and the rest go on; a
// SIGINT or SIGTERM while one validates stops there, as in Land.
func (s *Store) LandRemote(ctx context.Context, ids []string, o RemoteOptions) []RemoteLanded {
	out := make([]RemoteLanded, 0, len(ids))
	for _, id := range ids {
		tx, err := s.Tx(id)
		if err != nil {
			out = append(out, RemoteLanded{ID: id, Err: err})
			continue
		}
		out = append(out, tx.LandRemote(ctx, o))
		if ctx.Err() != nil || interruptedBy(out[len(out)-1].Err) != 0 {
			break
		}
	}
	return out
}

// LandRemote lands the transaction into a remote branch; see
// Store.LandRemote.
func (t *Tx) LandRemote(ctx context.Context, o RemoteOptions) RemoteLanded {
	l, err := t.landRemote(ctx, o)
	exported(&err)
	if l == nil {
		l = &RemoteLanded{ID: t.ID()}
	}
	l.Err = err
	if l.Result != nil {
		t.copyReceipt(l.Result, o.ReceiptCopy)
	}
	return *l
}

// landing is one landing's view of the remote: a private bare repository
// in the transaction's state, whose objects fall back on the base's
// repository (so that a fetch downloads only what the base lacks, and the
// commit the transaction opened at is readable), and the refs it fetched
// the branch and the notes to.
type landing struct {
	repo    git.Repo
	dir     string // the private repository
	remote  string // as the caller named it, for messages
	fetch   string // URL to fetch from
	push    string // URL to push to
	ref     string // refs/heads/<branch>
	baseDir string // the base, for messages
}

const (
	remoteRepoDir   = "remote.git"
	remoteIndexFile = "remote.index"
	fetchedHead     = "refs/land/head"
	fetchedNotes    = "refs/notes/fetched/airlock" // under refs/notes/: git notes reads it
	newNotes        = "refs/notes/new"
	remoteReadDepth = 10000 // first-parent commits searched for an earlier landing
)

func (t *Tx) landRemote(ctx context.Context, o RemoteOptions) (*RemoteLanded, error) {
	out := &RemoteLanded{ID: t.ID()}
	ref, err := branchRef(ctx, o.Branch)
	if err != nil {
		return nil, err
	}
	attempts := o.Attempts
	if attempts == 0 {
		attempts = DefaultRemoteAttempts
	}
	if attempts < 0 {
		return nil, fmt.Errorf("attempts is %d: a landing makes at least one", attempts)
	}
	unlockTx, err := t.st.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockTx()
	if res, done, err := t.settledAlready(); done || err != nil {
		if err != nil {
			return nil, err
		}
		if res.Receipt.LandedCommit != "" && res.Receipt.LandedBranch == ref {
			out.Commit, out.Already, out.Result = res.Receipt.LandedCommit, true, res
			return out, nil
		}
		where := "to its base"
		if res.Receipt.LandedBranch != "" {
			where = "into " + res.Receipt.LandedBranch
		}
		return nil, fmt.Errorf("transaction %s already settled as %s %s; only an open or refused transaction can land", t.ID(), res.Outcome, where)
	}
	// Before the snapshot is asked for: an interrupted apply is the first
	// thing to say, as in every preflight.
	if err := t.notInterrupted(); err != nil {
		return nil, err
	}
	var snap gitbase.Snapshot
	if err := t.st.Read(gitFile, &snap); err != nil || snap.Head == "" {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("transaction %s was not opened in a git repository with a commit (%s); landing into a remote needs the commit its base was at: open it in a clone of %s", t.ID(), t.Base(), o.Remote)
	}
	l, err := t.openLanding(ctx, o.Remote, ref)
	if err != nil {
		return nil, err
	}
	so := o.CommitOptions
	sc := so.settlement()

	// The one preflight every settle makes (see preflight); then what
	// the remote adds: boundaries here, and, against each head fetched,
	// protected paths, the candidate and its validators.
	w := t.commitSpace()
	p, err := t.preflight(ctx, w, so)
	if err != nil {
		return nil, err
	}
	set := p.set
	if set.Empty() {
		res, err := t.settle(ctx, NoChanges, nil, set, sc)
		out.Result = res
		return out, err
	}
	refused := func(r *Refusal) (*RemoteLanded, error) {
		res, err := t.settle(ctx, Refused, r, set, sc)
		out.Result = res
		return out, err
	}
	if p.refusal != nil {
		return refused(p.refusal)
	}
	var escapes []string
	for _, c := range set.Changes {
		if safefs.CheckRel(c.Path) != nil || manifest.IsGitMeta(c.Path) {
			escapes = append(escapes, c.Path)
		}
	}
	if r := checkBoundary(set, escapes); r != nil {
		return refused(r)
	}

	for out.Attempts < attempts {
		out.Attempts++
		head, notes, err := l.fetchHeads(ctx)
		if err != nil {
			return nil, err
		}
		if commit, err := l.findLanded(ctx, head, snap.Head, t.ID()); err != nil {
			return nil, err
		} else if commit != "" {
			// Landed before, by a process that did not live to record it:
			// report that commit and push nothing. Only when its receipt
			// proves it is this very transaction (another clone may have
			// landed one with the same id).
			res, err := t.recordFound(ctx, l, commit, notes, set)
			if err != nil {
				return nil, err
			}
			out.Commit, out.Already, out.Result = commit, true, res
			return out, nil
		}
		gate, err := t.remoteGate(ctx, l, head, &snap)
		if err != nil {
			return nil, err
		}
		sc.approved = approval(so, gate)
		if r, err := t.checkProtected(set, so, gate); err != nil {
			return nil, err
		} else if r != nil {
			return refused(r)
		}
		cand, r, err := t.buildCandidate(ctx, l, w, set, head, &snap)
		if err != nil {
			return nil, err
		}
		if r != nil {
			return refused(r)
		}
		if cmds := t.validators(so, gate); len(cmds) > 0 {
			r, ran, err := t.validateTree(ctx, l, cmds, gate, &snap)
			sc.validated = ran
			if err != nil {
				return nil, err
			}
			if r != nil {
				return refused(r)
			}
		}
		commit, err := t.commitCandidate(ctx, l, cand.tree, head, set)
		if err != nil {
			return nil, err
		}
		rc, data, err := t.landedReceipt(ctx, l, commit, head, notes, cand, set, sc)
		if err != nil {
			return nil, err
		}
		noteCommit, err := l.addNote(ctx, notes, commit, data)
		if err != nil {
			return nil, err
		}
		fault.Point("land-remote:built")
		moved, err := l.pushAtomic(ctx, head, notes, commit, noteCommit)
		if err != nil {
			return nil, err
		}
		if moved {
			t.event("remote_moved", map[string]any{"attempt": out.Attempts, "branch": ref})
			continue
		}
		fault.Point("land-remote:pushed")
		out.Commit = commit
		out.Result, err = t.recordLanded(ctx, rc, data, set, sc)
		if out.Result != nil && len(cand.ignored) > 0 {
			out.Result.Warnings = append(out.Result.Warnings, fmt.Sprintf("not landed, as git ignores them in %s and %s does not track them: %s", t.Base(), l.ref, strings.Join(cand.ignored, ", ")))
		}
		return out, err
	}
	return refused(refuse(RemoteMoved, nil, "%s on %s moved under each of %d attempts (another host landed first each time); nothing was pushed. Land again, or give more attempts (--retries)", ref, l.remote, attempts))
}

// gitIgnored lists the change set's paths that the base's repository
// ignores (its .gitignore files, info/exclude and core.excludesFile, as
// the user's checkout holds them).
func (t *Tx) gitIgnored(ctx context.Context, set *changeset.Set) (map[string]bool, error) {
	paths := make([]string, len(set.Changes))
	for i, c := range set.Changes {
		paths[i] = c.Path
	}
	out, err := git.In(t.Base()).Ignored(ctx, paths)
	if err != nil {
		return nil, fmt.Errorf("ask git which changed paths %s ignores: %w", t.Base(), err)
	}
	return out, nil
}

// branchRef checks a branch name as git would and returns its full ref.
func branchRef(ctx context.Context, branch string) (string, error) {
	if branch == "" {
		return "", errors.New("no branch given: name the remote branch to land into (--branch)")
	}
	ref := "refs/heads/" + strings.TrimPrefix(branch, "refs/heads/")
	if strings.HasPrefix(branch, "-") {
		return "", fmt.Errorf("branch %q is not a valid branch name", branch)
	}
	if _, err := git.Run(ctx, "check-ref-format", ref); err != nil {
		return "", fmt.Errorf("branch %q is not a valid branch name (git check-ref-format %s refuses it)", branch, ref)
	}
	return ref, nil
}

// openLanding resolves the remote against the base's repository and makes
// (or reuses) the transaction's private repository.
func (t *Tx) openLanding(ctx context.Context, remote, ref string) (*landing, error) {
	fetchURL, pushURL, err := resolveRemote(ctx, t.Base(), remote)
	if err != nil {
		return nil, err
	}
	dir := t.st.Path(remoteRepoDir)
	l := &landing{repo: git.At(dir), dir: dir, remote: redact(remote), fetch: fetchURL, push: pushURL, ref: ref, baseDir: t.Base()}
	if err := initPrivate(ctx, dir, t.Base()); err != nil {
		return nil, err
	}
	return l, nil
}

// initPrivate makes a bare repository at dir, once, whose objects fall
// back on those of the repository holding from (when from is in one).
// No gc runs there: objects a landing made stay until it is over.
func initPrivate(ctx context.Context, dir, from string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	if _, err := git.Run(ctx, "init", "--bare", "-q", dir); err != nil {
		return fmt.Errorf("make the landing's repository %s: %w", dir, err)
	}
	if _, err := git.At(dir).Run(ctx, "config", "gc.auto", "0"); err != nil {
		return fmt.Errorf("configure the landing's repository %s: %w", dir, err)
	}
	if from == "" {
		return nil
	}
	common, err := git.In(from).Run(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return nil // not in a repository: every object comes from the remote
	}
	objects := filepath.Join(strings.TrimSpace(string(common)), "objects")
	alt := filepath.Join(dir, "objects", "info", "alternates")
	if err := os.MkdirAll(filepath.Dir(alt), 0o700); err != nil {
		return err
	}
	return safefs.WriteFile(alt, []byte(objects+"\n"), 0o600)
}

// resolveRemote returns the fetch and push URLs of a remote of the
// repository holding dir, or remote itself when it names none.
func resolveRemote(ctx context.Context, dir, remote string) (string, string, error) {
	if remote == "" {
		return "", "", errors.New("no remote given: name a remote of the base's repository or a URL (--remote)")
	}
	if strings.HasPrefix(remote, "-") {
		return "", "", fmt.Errorf("remote %q is neither a remote name nor a URL", remote)
	}
	if dir != "" {
		if f, err := git.In(dir).Run(ctx, "remote", "get-url", remote); err == nil {
			p, err := git.In(dir).Run(ctx, "remote", "get-url", "--push", remote)
			if err != nil {
				return "", "", fmt.Errorf("read the push URL of remote %s in %s: %w", remote, dir, err)
			}
			return strings.TrimSpace(string(f)), strings.TrimSpace(string(p)), nil
		}
	}
	return remote, remote, nil
}

// redact drops a password from a URL, for messages: airlock never shows
// or stores a secret, even one the caller put in a URL.
// RedactRemote is a remote as airlock prints it: a password, a token given
// as the URL's user, and the query are masked.
func RedactRemote(remote string) string { return redact(remote) }

func redact(remote string) string {
	u, err := url.Parse(remote)
	if err != nil || (u.User == nil && u.RawQuery == "") {
		return remote
	}
	if u.User != nil {
		// A token is often the user part alone (https://TOKEN@host);
		// ssh's conventional "git" user is no secret.
		if _, pw := u.User.Password(); pw {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else if u.User.Username() != "git" {
			u.User = url.User("xxxxx")
		}
	}
	if u.RawQuery != "" {
		u.RawQuery = "xxxxx"
	}
	return u.String()
}

// secrets lists the parts of a remote URL redact masks, so that they can
// be masked in what git says too.
func secrets(remote string) []string {
	u, err := url.Parse(remote)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, pw)
		} else if name := u.User.Username(); name != "" && name != "git" {
			out = append(out, name)
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	if u.RawQuery != "" {
		out = append(out, u.RawQuery)
	}
	return out
}

// mask replaces every secret of the landing's remote URLs in text.
func (l *landing) mask(text string) string {
	for _, u := range []string{l.fetch, l.push} {
		for _, s := range secrets(u) {
			text = strings.ReplaceAll(text, s, "xxxxx")
		}
	}
	return text
}

// gitSaid is what git said about a failure, without the command line
// (which holds the URL).
func gitSaid(err error) string {
	var e *git.Error
	if errors.As(err, &e) {
		if e.Stderr != "" {
			return strings.ReplaceAll(e.Stderr, "\n", "; ")
		}
		return e.Err.Error()
	}
	return err.Error()
}

// fetchHeads fetches the branch and the receipt notes and returns their
// heads (notes "" when the remote has none yet).
func (l *landing) fetchHeads(ctx context.Context) (string, string, error) {
	// The glob fetches no notes ref where the remote has none, and
	// --prune drops one the remote deleted.
	_, err := l.repo.Run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", "--", l.fetch,
		"+"+l.ref+":"+fetchedHead, "+refs/notes/*:refs/notes/fetched/*")
	if err != nil {
		msg := l.mask(gitSaid(err))
		if strings.Contains(msg, "couldn't find remote ref") {
			return "", "", fmt.Errorf("%s has no branch %s: create it once with git (git push %s <commit>:%s)", l.remote, l.ref, l.remote, l.ref)
		}
		return "", "", fmt.Errorf("fetch %s from %s: %s; airlock authenticates as git does (ssh keys, credential helpers, never a prompt): check that `git fetch %s` works in %s", l.ref, l.remote, msg, l.remote, l.baseDir)
	}
	head, err := l.resolve(ctx, fetchedHead)
	if err != nil || head == "" {
		return "", "", fmt.Errorf("read the fetched head of %s: %v", l.ref, err)
	}
	notes, err := l.resolve(ctx, fetchedNotes)
	return head, notes, err
}

// resolve returns the object a ref names, "" when there is no such ref.
func (l *landing) resolve(ctx context.Context, ref string) (string, error) {
	out, err := l.repo.Run(ctx, "rev-parse", "--verify", "-q", ref)
	if err != nil {
		var e *git.Error
		if errors.As(err, &e) && e.Stderr == "" {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// findLanded looks for a commit on the branch's first-parent history since
// the transaction's own base commit that carries the transaction's
// trailer. A commit landed later than the transaction opened cannot be an
// ancestor of the commit it opened at, so the walk stops there (or after
// remoteReadDepth commits when that commit is unknown).
func (l *landing) findLanded(ctx context.Context, head, since, id string) (string, error) {
	args := []string{"log", "--first-parent", "--max-count=" + strconv.Itoa(remoteReadDepth), "--format=%H%x00%(trailers:key=" + TxTrailer + ",valueonly,separator=%x00)", head}
	if _, err := l.repo.Run(ctx, "cat-file", "-e", since+"^{commit}"); err == nil {
		args = append(args, "^"+since)
	}
	args = append(args, "--")
	out, err := l.repo.Run(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("search %s for an earlier landing of %s: %w", l.ref, id, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) > 1 && slices.Contains(f[1:], id) {
			return f[0], nil
		}
	}
	return "", nil
}

// remoteGate is the project's gate as the branch head holds it: its
// .airlock.toml there (protect, validate), on top of what the transaction
// recorded at open. A config that does not parse leaves the recorded gate
// alone, as a commit does with a base's broken config.
func (t *Tx) remoteGate(ctx context.Context, l *landing, head string, snap *gitbase.Snapshot) (*project, error) {
	root := t.Base()
	if t.rec.Project != "" {
		root = string(t.rec.Project)
	}
	gate := &project{Root: root, Under: string(t.rec.Under), Cfg: config.Default()}
	path := projectPrefix(snap.Prefix, gate.Under) + config.FileName
	ents, err := l.lsTree(ctx, head, []string{path})
	if err != nil {
		return nil, err
	}
	e, ok := ents[path]
	if !ok || e.kind() != manifest.KindFile {
		return gate, nil
	}
	data, err := l.repo.Run(ctx, "cat-file", "blob", e.oid)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, head, err)
	}
	cfg, err := config.Parse(l.ref+":"+path, data)
	if err != nil {
		gate.Cfg.Validate = t.rec.Validate
		return gate, nil
	}
	gate.Cfg = cfg
	return gate, nil
}

// projectPrefix is the project root's path in the repository, with a
// trailing slash ("" at the top): the base's prefix less the base's place
// under the project.
func projectPrefix(basePrefix, under string) string {
	if under == "" {
		return basePrefix
	}
	return strings.TrimSuffix(basePrefix, under+"/")
}

// treeEntry is one entry of a git tree.
type treeEntry struct {
	mode, oid string
}

func (e treeEntry) kind() manifest.Kind {
	switch e.mode {
	case "":
		return manifest.KindNone
	case "100644", "100755":
		return manifest.KindFile
	case "120000":
		return manifest.KindSymlink
	case "040000":
		return manifest.KindDir
	}
	return manifest.KindOther // a submodule
}

// lsTree reads the entries of commit at the given repository paths; a path
// the commit does not hold is not in the map.
func (l *landing) lsTree(ctx context.Context, commit string, paths []string) (map[string]treeEntry, error) {
	out := map[string]treeEntry{}
	// In batches: the command line has a bound, the change set none.
	const batch = 500
	for i := 0; i < len(paths); i += batch {
		args := append([]string{"ls-tree", "-z", "--full-tree", commit, "--"}, paths[i:min(i+batch, len(paths))]...)
		b, err := l.repo.Run(ctx, args...)
		if err != nil {
			return nil, fmt.Errorf("read %s's tree: %w", commit, err)
		}
		for _, rec := range bytes.Split(b, []byte{0}) {
			meta, path, ok := bytes.Cut(rec, []byte{'\t'})
			if !ok {
				continue
			}
			f := strings.Fields(string(meta))
			if len(f) != 3 {
				continue
			}
			out[string(path)] = treeEntry{mode: f[0], oid: f[2]}
		}
	}
	return out, nil
}

// candidate is a landing's tree and what it did to the touched paths.
type candidate struct {
	tree          string
	before, after []treeEntry // per change, as the head holds it and as the tree does
	merged        []string    // paths three-way merged with the head's version
	// ignored are the changed paths left out: git ignores them in the
	// base's repository and neither the head nor the transaction's base
	// commit tracks them (an .env, a build output), as `git add` would.
	ignored []string
	// beforeDigest and afterDigest cover the touched paths as the head
	// and the candidate hold them (entriesGitDigest).
	beforeDigest, afterDigest string
}

// buildCandidate writes the candidate tree: the head's tree with the
// change set applied, each path the head changed since the commit the
// transaction opened at three-way merged with the head's version, or the
// landing refused as a commit would be (BaseDrift, MergeConflict). The
// candidate is left in the landing's scratch index, for validation.
func (t *Tx) buildCandidate(ctx context.Context, l *landing, w *workspace, set *changeset.Set, head string, snap *gitbase.Snapshot) (*candidate, *Refusal, error) {
	idx := t.st.Path(remoteIndexFile)
	os.Remove(idx)
	ir := l.repo.WithIndex(idx)
	if _, err := ir.Run(ctx, "read-tree", head); err != nil {
		return nil, nil, fmt.Errorf("read %s into the landing's index: %w", head, err)
	}
	objects := w.path(objectsDir)
	paths := make([]string, len(set.Changes))
	for i, c := range set.Changes {
		paths[i] = snap.Prefix + c.Path
	}
	now, err := l.lsTree(ctx, head, paths)
	if err != nil {
		return nil, nil, err
	}
	then, err := l.lsTree(ctx, snap.Head, paths)
	if err != nil {
		return nil, nil, err
	}
	want, err := l.resultEntries(ctx, set, objects)
	if err != nil {
		return nil, nil, err
	}
	ignored, err := t.gitIgnored(ctx, set)
	if err != nil {
		return nil, nil, err
	}
	orig, err := t.originals()
	if err != nil {
		return nil, nil, err
	}
	cand := &candidate{}
	var info, gone bytes.Buffer
	var unmergeable, conflicts []string
	zero := strings.Repeat("0", len(head))
	for i, c := range set.Changes {
		p := paths[i]
		h, b, r := now[p], then[p], want[i]
		cand.before = append(cand.before, h)
		if ignored[c.Path] && h.kind() == manifest.KindNone && b.kind() == manifest.KindNone {
			cand.after = append(cand.after, h)
			cand.ignored = append(cand.ignored, c.Path)
			continue
		}
		if h.kind() == manifest.KindDir || r.kind() == manifest.KindDir {
			// git keeps no directories, only what is in them: a
			// directory is the change set's children's business, unless
			// a file or link is in the way on one side.
			if (h.kind() == manifest.KindDir || h.kind() == manifest.KindNone) && (r.kind() == manifest.KindDir || r.kind() == manifest.KindNone) {
				cand.after = append(cand.after, h)
				continue
			}
		}
		switch {
		case h == b || h == r:
			// The head did not touch the path since the transaction's
			// base commit, or already holds the result.
		case c.Op == changeset.Modify && c.Base.Kind == manifest.KindFile && c.Result.Kind == manifest.KindFile && h.kind() == manifest.KindFile:
			m, how, err := t.mergeRemote(ctx, l, orig, c, h, objects)
			if err != nil {
				return nil, nil, err
			}
			switch how {
			case mergeImpossible:
				unmergeable = append(unmergeable, c.Path)
				continue
			case mergeConflict:
				conflicts = append(conflicts, c.Path)
				continue
			}
			r = m
			cand.merged = append(cand.merged, c.Path)
		default:
			unmergeable = append(unmergeable, c.Path)
			continue
		}
		cand.after = append(cand.after, r)
		switch {
		case r.mode == "" || r.kind() == manifest.KindDir:
			// Gone, or a file or link made a directory: git keeps the
			// directory's children, which are changes of their own.
			fmt.Fprintf(&gone, "0 %s\t%s\x00", zero, p)
		default:
			fmt.Fprintf(&info, "%s %s\t%s\x00", r.mode, r.oid, p)
		}
	}
	// Removals first: a directory's children leave the index before a
	// file takes its name, and a file leaves before its name is a
	// directory's.
	batch := append(gone.Bytes(), info.Bytes()...)
	switch {
	case len(unmergeable) > 0:
		return nil, refuse(BaseDrift, append(unmergeable, conflicts...), "changed on %s since the commit the transaction opened at (%.12s), and cannot be merged", l.ref, snap.Head), nil
	case len(conflicts) > 0:
		return nil, refuse(MergeConflict, conflicts, "changed on %s since the commit the transaction opened at (%.12s), with edits that overlap the transaction's", l.ref, snap.Head), nil
	}
	if len(batch) > 0 {
		if _, err := ir.RunInput(ctx, batch, "update-index", "-z", "--index-info"); err != nil {
			return nil, nil, fmt.Errorf("apply the change set to the landing's index: %w", err)
		}
	}
	tree, err := ir.Run(ctx, "write-tree")
	if err != nil {
		return nil, nil, fmt.Errorf("write the candidate tree: %w", err)
	}
	cand.tree = strings.TrimSpace(string(tree))
	cand.beforeDigest = entriesGitDigest(paths, cand.before)
	cand.afterDigest = entriesGitDigest(paths, cand.after)
	return cand, nil, nil
}

// resultEntries writes the change set's results as blobs and returns, per
// change, the entry it asks for (mode "" for a deletion, 040000 for a
// directory).
func (l *landing) resultEntries(ctx context.Context, set *changeset.Set, objects string) ([]treeEntry, error) {
	out := make([]treeEntry, len(set.Changes))
	var files []int
	var list bytes.Buffer
	for i, c := range set.Changes {
		switch c.Result.Kind {
		case manifest.KindFile:
			files = append(files, i)
			list.WriteString(changeset.ObjectPath(objects, c.Result.Digest) + "\n")
		case manifest.KindSymlink:
			oid, err := l.writeBlob(ctx, []byte(c.Result.Target))
			if err != nil {
				return nil, err
			}
			out[i] = treeEntry{mode: "120000", oid: oid}
		case manifest.KindDir:
			out[i] = treeEntry{mode: "040000"}
		}
	}
	if len(files) == 0 {
		return out, nil
	}
	b, err := l.repo.RunInput(ctx, list.Bytes(), "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return nil, fmt.Errorf("write the change set's content into the landing's repository: %w", err)
	}
	oids := strings.Fields(string(b))
	if len(oids) != len(files) {
		return nil, fmt.Errorf("write the change set's content: git named %d objects for %d files", len(oids), len(files))
	}
	for k, i := range files {
		out[i] = treeEntry{mode: gitFileMode(set.Changes[i].Result.Mode), oid: oids[k]}
	}
	return out, nil
}

func gitFileMode(m fs.FileMode) string {
	if m&0o111 != 0 {
		return "100755"
	}
	return "100644"
}

func (l *landing) writeBlob(ctx context.Context, data []byte) (string, error) {
	b, err := l.repo.RunInput(ctx, data, "hash-object", "-w", "--no-filters", "--stdin")
	if err != nil {
		return "", fmt.Errorf("write an object into the landing's repository: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// mergeRemote three-way merges a file the head changed: ancestor the
// content at open (the originals a local commit kept, else the blob of the
// commit the base was at when the path was clean then), ours the frozen
// result, theirs the head's blob. Only the executable bit of a mode is
// git's, so only it is merged.
func (t *Tx) mergeRemote(ctx context.Context, l *landing, orig *originals.Store, c changeset.Change, h treeEntry, objects string) (treeEntry, mergeHow, error) {
	anc, ok, err := t.ancestor(ctx, orig, c.Base)
	if err != nil {
		return treeEntry{}, 0, fmt.Errorf("read the merge base of %s: %w", c.Path, err)
	}
	if !ok {
		return treeEntry{}, mergeImpossible, nil
	}
	exec := func(m fs.FileMode) fs.FileMode { return m & 0o100 }
	hMode := fs.FileMode(0)
	if h.mode == "100755" {
		hMode = 0o100
	}
	mode, ok := merge.Mode(exec(c.Base.Mode), exec(c.Result.Mode), hMode)
	if !ok {
		return treeEntry{}, mergeConflict, nil
	}
	ours, err := os.ReadFile(changeset.ObjectPath(objects, c.Result.Digest))
	if err != nil {
		return treeEntry{}, 0, fmt.Errorf("read the frozen content of %s: %w", c.Path, err)
	}
	theirs, err := l.repo.Run(ctx, "cat-file", "blob", h.oid)
	if err != nil {
		return treeEntry{}, 0, fmt.Errorf("read %s on %s: %w", c.Path, l.ref, err)
	}
	content, how, err := mergeContent(anc, ours, theirs)
	if err != nil || how != merged {
		return treeEntry{}, how, err
	}
	oid, err := l.writeBlob(ctx, content)
	if err != nil {
		return treeEntry{}, 0, err
	}
	return treeEntry{mode: gitFileMode(mode | 0o644), oid: oid}, merged, nil
}

// entriesGitDigest is a landing's base and result digest: the touched
// paths as a commit holds them, content named by git's object ids.
func entriesGitDigest(paths []string, es []treeEntry) string {
	idx := make([]int, len(paths))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return paths[idx[a]] < paths[idx[b]] })
	h := sha256.New()
	for _, i := range idx {
		if i >= len(es) || es[i].mode == "" || es[i].kind() == manifest.KindDir {
			continue
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", paths[i], es[i].mode, es[i].oid)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// validateTree checks the candidate out of the landing's index into a
// throw-away directory and runs the validators there, at the project
// root's place in it.
func (t *Tx) validateTree(ctx context.Context, l *landing, cmds []string, gate *project, snap *gitbase.Snapshot) (*Refusal, []string, error) {
	return t.interruptible(ctx, func(ctx context.Context) (*Refusal, []string, error) {
		return t.validateTreeIn(ctx, l, cmds, gate, snap)
	})
}

// validateTreeIn is validateTree with SIGINT and SIGTERM caught.
func (t *Tx) validateTreeIn(ctx context.Context, l *landing, cmds []string, gate *project, snap *gitbase.Snapshot) (*Refusal, []string, error) {
	dir := t.st.Path(candidateDir)
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, fmt.Errorf("remove the old candidate %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("make the candidate %s: %w", dir, err)
	}
	defer os.RemoveAll(dir)
	ir := l.repo.WithIndex(t.st.Path(remoteIndexFile))
	if _, err := ir.Run(ctx, "--work-tree="+dir, "checkout-index", "-a", "-f"); err != nil {
		return nil, nil, fmt.Errorf("check the candidate out into %s: %w", dir, err)
	}
	top := strings.TrimSuffix(t.Base(), "/"+strings.TrimSuffix(snap.Prefix, "/"))
	sub := strings.TrimSuffix(projectPrefix(snap.Prefix, gate.Under), "/")
	return t.runValidators(ctx, cmds, gate, candidateRun{dir: dir, base: top, sub: sub, log: t.st.Path(validateLog)})
}

// commitCandidate makes the landed commit: the candidate tree, parent the
// head, and the transaction's trailer.
func (t *Tx) commitCandidate(ctx context.Context, l *landing, tree, head string, set *changeset.Set) (string, error) {
	a, m, d := set.Counts()
	var msg strings.Builder
	fmt.Fprintf(&msg, "airlock: land transaction %s\n\n", t.ID())
	fmt.Fprintf(&msg, "%d added, %d modified, %d deleted", a, m, d)
	if len(t.rec.Command) > 0 {
		// One line, whatever the argv holds: a newline in it must not make
		// the message carry a trailer of the command's choosing.
		cmd := strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return ' '
			}
			return r
		}, strings.Join(plain(t.rec.Command), " "))
		fmt.Fprintf(&msg, " by `%s`", cmd)
	}
	fmt.Fprintf(&msg, ".\n\n%s: %s\n", TxTrailer, t.ID())
	args := append(gitIdentity(ctx, t.Base()), "commit-tree", tree, "-p", head, "-F", "-")
	out, err := l.repo.RunInput(ctx, []byte(msg.String()), args...)
	if err != nil {
		return "", fmt.Errorf("make the landed commit: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// gitIdentity is who the landed commit and its note are by: the base
// repository's user, else airlock (GIT_AUTHOR_* and GIT_COMMITTER_* in
// the environment win over both, as git has it).
func gitIdentity(ctx context.Context, base string) []string {
	name, email := "airlock", "airlock@localhost"
	if b, err := git.In(base).Run(ctx, "config", "user.name"); err == nil && strings.TrimSpace(string(b)) != "" {
		name = strings.TrimSpace(string(b))
	}
	if b, err := git.In(base).Run(ctx, "config", "user.email"); err == nil && strings.TrimSpace(string(b)) != "" {
		email = strings.TrimSpace(string(b))
	}
	return []string{"-c", "user.name=" + name, "-c", "user.email=" + email}
}

// landedReceipt seals the receipt of a landing: previous is the receipt
// of the newest airlock commit on the head's first-parent history.
func (t *Tx) landedReceipt(ctx context.Context, l *landing, commit, head, notes string, cand *candidate, set *changeset.Set, sc *settlement) (*receipt.Receipt, []byte, error) {
	prev, err := l.chainHead(ctx, head, notes)
	if err != nil {
		return nil, nil, err
	}
	rc := t.newReceipt(Committed, set, sc, cand.beforeDigest, cand.afterDigest, prev)
	rc.LandedBranch, rc.LandedCommit = l.ref, commit
	data, err := rc.Seal()
	if err != nil {
		return nil, nil, err
	}
	return rc, data, nil
}

// notesOf lists the notes under a notes commit: annotated commit → note
// blob. A notes tree may fan out (ab/cdef…): the path less its slashes is
// the commit.
func (l *landing) notesOf(ctx context.Context, notes string) (map[string]string, error) {
	out := map[string]string{}
	if notes == "" {
		return out, nil
	}
	b, err := l.repo.Run(ctx, "ls-tree", "-r", "-z", "--full-tree", notes)
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

// chainHead is the digest of the receipt of the newest commit on head's
// first-parent history that carries one: the previous link of a new
// landing's receipt.
func (l *landing) chainHead(ctx context.Context, head, notes string) (string, error) {
	ns, err := l.notesOf(ctx, notes)
	if err != nil || len(ns) == 0 {
		return "", err
	}
	b, err := l.repo.Run(ctx, "rev-list", "--first-parent", head, "--")
	if err != nil {
		return "", fmt.Errorf("walk %s: %w", l.ref, err)
	}
	for _, c := range strings.Fields(string(b)) {
		blob, ok := ns[c]
		if !ok {
			continue
		}
		data, err := l.repo.Run(ctx, "cat-file", "blob", blob)
		if err != nil {
			return "", fmt.Errorf("read the receipt note of %s: %w", c, err)
		}
		rc, err := receipt.Verify(data)
		if err != nil {
			return "", fmt.Errorf("the receipt note of commit %s on %s does not verify (%v): a new landing will not chain to it; see `airlock log --remote %s --branch %s`", c, l.ref, err, l.remote, strings.TrimPrefix(l.ref, "refs/heads/"))
		}
		return rc.Digest, nil
	}
	return "", nil
}

// addNote makes the notes commit that adds data as commit's note on top of
// the fetched notes head, and returns it.
func (l *landing) addNote(ctx context.Context, notes, commit string, data []byte) (string, error) {
	if notes != "" {
		if _, err := l.repo.Run(ctx, "update-ref", newNotes, notes); err != nil {
			return "", fmt.Errorf("prepare the receipt note: %w", err)
		}
	} else if _, err := l.repo.Run(ctx, "update-ref", "-d", newNotes); err != nil {
		return "", fmt.Errorf("prepare the receipt note: %w", err)
	}
	blob, err := l.writeBlob(ctx, data)
	if err != nil {
		return "", err
	}
	args := append(gitIdentity(ctx, l.baseDir), "notes", "--ref="+newNotes, "add", "-f", "-C", blob, commit)
	if _, err := l.repo.Run(ctx, args...); err != nil {
		return "", fmt.Errorf("add the receipt note to %s: %w", commit, err)
	}
	return l.resolve(ctx, newNotes)
}

// pushAtomic pushes the landed commit and the notes commit in one atomic
// push whose leases are the heads the landing fetched. It reports moved
// when the push was refused and the remote's heads are no longer those:
// another pusher won, and the landing starts over. A push refused while
// the heads are unchanged failed for another reason (permissions, a
// server hook, branch protection), which is an error.
func (l *landing) pushAtomic(ctx context.Context, head, notes, commit, noteCommit string) (bool, error) {
	out, err := l.repo.Run(ctx, "push", "--atomic", "--porcelain", "--quiet",
		"--force-with-lease="+l.ref+":"+head, "--force-with-lease="+NotesRef+":"+notes,
		"--", l.push, commit+":"+l.ref, noteCommit+":"+NotesRef)
	if err == nil {
		return false, nil
	}
	nowHead, nowNotes, lerr := l.remoteHeads(ctx)
	if lerr == nil && (nowHead != head || nowNotes != notes) {
		return true, nil
	}
	var refused []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "!") {
			refused = append(refused, strings.Join(strings.Fields(line)[1:], " "))
		}
	}
	detail := gitSaid(err)
	if len(refused) > 0 {
		detail = strings.Join(refused, "; ") + "; " + detail
	}
	detail = l.mask(detail)
	return false, fmt.Errorf("push %s and %s to %s: %s; airlock's push is a plain git push: check that `git push %s` is allowed here (credentials, branch protection, the right to push %s)", l.ref, NotesRef, l.remote, detail, l.remote, NotesRef)
}

// remoteHeads asks the remote for its branch and notes heads.
func (l *landing) remoteHeads(ctx context.Context) (string, string, error) {
	b, err := l.repo.Run(ctx, "ls-remote", "--", l.push, l.ref, NotesRef)
	if err != nil {
		return "", "", err
	}
	var head, notes string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		switch f[1] {
		case l.ref:
			head = f[0]
		case NotesRef:
			notes = f[0]
		}
	}
	return head, notes, nil
}

// recordLanded settles the transaction as committed into the remote: its
// receipt is the note just pushed. The base was not touched and its own
// receipt chain does not move; the staged workspace goes.
func (t *Tx) recordLanded(ctx context.Context, rc *receipt.Receipt, data []byte, set *changeset.Set, sc *settlement) (*Result, error) {
	path, err := t.writeReceipt(data)
	if err != nil {
		return nil, fmt.Errorf("%s landed as %s, but its receipt was not written here: %w", t.ID(), rc.LandedCommit, err)
	}
	res, err := t.settled(Committed, nil, rc, path, set, sc, map[string]any{"landed_branch": rc.LandedBranch, "landed_commit": rc.LandedCommit})
	if err != nil {
		return nil, err
	}
	t.settleStaged(ctx)
	os.RemoveAll(t.st.Path(remoteRepoDir))
	os.Remove(t.st.Path(remoteIndexFile))
	return res, nil
}

// recordFound settles a transaction found already landed at commit, with
// the receipt its note holds — only when that verifies and is this very
// transaction's: its id, its base (path, device, inode, file system) and its change
// set's digest. Anything else is an error that leaves the transaction as
// it is: a commit that merely carries its id (another clone's transaction
// with the same id, or any commit with that trailer) did not land it.
func (t *Tx) recordFound(ctx context.Context, l *landing, commit, notes string, set *changeset.Set) (*Result, error) {
	notMine := func(why string) error {
		return fmt.Errorf("commit %s on %s carries %s: %s, but %s; transaction %s was not landed and is kept: discard it, or open it again under another id (--id) and land that", commit, l.ref, TxTrailer, t.ID(), why, t.ID())
	}
	ns, err := l.notesOf(ctx, notes)
	if err != nil {
		return nil, err
	}
	blob, ok := ns[commit]
	if !ok {
		return nil, notMine("it has no receipt note")
	}
	data, err := l.repo.Run(ctx, "cat-file", "blob", blob)
	if err != nil {
		return nil, err
	}
	rc, err := receipt.Verify(data)
	switch {
	case err != nil:
		return nil, notMine("its receipt note does not verify (" + err.Error() + ")")
	case rc.TxID != t.ID() || rc.LandedCommit != commit:
		return nil, notMine("its receipt note names another transaction or commit")
	case rc.Base != t.Base() || rc.BaseDevice != t.rec.BaseDevice || rc.BaseInode != t.rec.BaseInode || rc.BaseFS != t.rec.BaseFS:
		return nil, notMine(fmt.Sprintf("its receipt is of a transaction over another base (%s)", rc.Base))
	case rc.DiffDigest != set.Digest():
		return nil, notMine("its receipt is of another change set (" + rc.DiffDigest + ")")
	}
	r, err := t.recordLanded(ctx, rc, data, set, &settlement{validated: rc.Validators})
	if r != nil {
		r.Repeat = true
	}
	return r, err
}
