package airlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/gitbase"
	"github.com/airlockdev/airlock/internal/landing"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/merge"
	"github.com/airlockdev/airlock/internal/originals"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/safefs"
)

// DefaultRemoteAttempts is how many times a landing into a remote fetches,
// merges, validates and pushes before it refuses RemoteMoved, when
// RemoteOptions.Attempts is zero.
const DefaultRemoteAttempts = 6

// RemoteOptions say where LandRemote lands.
type RemoteOptions struct {
	// Remote is a remote of the base's repository ("origin") or a URL git
	// accepts. Authentication is the clone's, as `git fetch` there has
	// it (its core.sshCommand, http.* and credential.* settings, see
	// docs/landing.md); airlock never prompts (ssh runs in batch mode
	// unless the user names their own) and stores no credential.
	Remote string
	// Branch is the branch to land into, without refs/heads/; it must
	// exist on the remote.
	Branch string
	// Attempts bounds how many times the remote may be found moved at the
	// push before the landing refuses RemoteMoved; 0 means
	// DefaultRemoteAttempts.
	Attempts int
	// Jitter is the randomness of the wait between attempts (drawn from
	// the upper half of 250 ms, doubling per lost race up to 4 s): a
	// number in [0, 1) per call; nil means math/rand. A test gives a
	// fixed one to know each wait.
	Jitter func() float64
	// Limits bound each git call against the remote.
	Limits RemoteLimits
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
// push that finds either moved waits (o.Jitter) and starts over
// from the fetch, up to o.Attempts times. A refused transaction is kept
// and the rest go on; a SIGINT or SIGTERM while one validates stops
// there, as in Land.
//
// Several transactions land as a batch, as a merge queue does (see
// landBatch): one candidate holding all of them, validated once, pushed
// as one commit per transaction in one atomic push; when the batch fails
// validation, bisection finds the transaction that breaks it, which is
// refused ValidationFailed, and the rest land.
func (s *Store) LandRemote(ctx context.Context, ids []string, o RemoteOptions) []RemoteLanded {
	if len(ids) > 1 {
		if out, ok := s.landBatch(ctx, ids, o); ok {
			return out
		}
	}
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
	return t.remoteLanded(l, err, o)
}

// remoteLanded is what a landing into a remote reports: the outcome l
// (nil when it ended before one), its error, the receipt copied where o
// asks.
func (t *Tx) remoteLanded(l *RemoteLanded, err error, o RemoteOptions) RemoteLanded {
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

const (
	remoteRepoDir   = "remote.git"
	remoteIndexFile = "remote.index"
)

func (t *Tx) landRemote(ctx context.Context, o RemoteOptions) (*RemoteLanded, error) {
	ref, attempts, err := remoteTarget(ctx, o)
	if err != nil {
		return nil, err
	}
	unlockTx, err := t.settleLock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockTx()
	rl, out, err := t.prepareRemote(ctx, o, ref)
	if rl == nil {
		return out, err
	}
	return t.landRemoteLoop(ctx, rl, o, attempts)
}

// remoteTarget checks the branch and the attempts o names.
func remoteTarget(ctx context.Context, o RemoteOptions) (string, int, error) {
	ref, err := landing.BranchRef(ctx, o.Branch)
	if err != nil {
		return "", 0, err
	}
	attempts := o.Attempts
	if attempts == 0 {
		attempts = DefaultRemoteAttempts
	}
	if attempts < 0 {
		return "", 0, fmt.Errorf("attempts is %d: a landing makes at least one", attempts)
	}
	return ref, attempts, nil
}

// prepareRemote is what a landing into a remote checks once, the
// transaction locked: settled already, interrupted, the snapshot of its
// repository, the preflight and the boundaries. It returns the landing
// to go on with, or (rl nil) the outcome that ended it here.
func (t *Tx) prepareRemote(ctx context.Context, o RemoteOptions, ref string) (*remoteLanding, *RemoteLanded, error) {
	var err error
	if out, done, err := t.landedAlready(ctx, o.Remote, ref); done || err != nil {
		return nil, out, err
	}
	// Before the snapshot is asked for: an interrupted apply is the first
	// thing to say, as in every preflight.
	if err := t.notInterrupted(); err != nil {
		return nil, nil, err
	}
	rl := &remoteLanding{o: o.CommitOptions, sc: o.settlement(), out: &RemoteLanded{ID: t.ID()}}
	if err := t.st.Read(gitFile, &rl.snap); err != nil || rl.snap.Head == "" {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("transaction %s was not opened in a git repository with a commit (%s); landing into a remote needs the commit its base was at: open it in a clone of %s", t.ID(), t.Base(), landing.Redact(o.Remote))
	}
	if rl.l, err = t.openLanding(ctx, o.Remote, ref); err != nil {
		return nil, nil, err
	}
	rl.l.Bounds = o.Limits.bounds()

	// The one preflight every settle makes (see preflight); then what
	// the remote adds: boundaries here, and, against each head fetched,
	// protected paths, the candidate and its validators.
	rl.w = t.commitSpace()
	p, err := t.preflight(ctx, rl.w, rl.o)
	if err != nil {
		return nil, nil, err
	}
	rl.set = p.set
	if rl.set.Empty() {
		out, err := rl.settle(ctx, t, NoChanges, nil)
		return nil, out, err
	}
	if p.refusal != nil {
		out, err := rl.settle(ctx, t, Refused, p.refusal)
		return nil, out, err
	}
	var escapes []string
	for _, c := range rl.set.Changes {
		if safefs.CheckRel(c.Path) != nil || manifest.IsGitMeta(c.Path) {
			escapes = append(escapes, c.Path)
		}
	}
	if r := checkBoundary(rl.set, escapes); r != nil {
		out, err := rl.settle(ctx, t, Refused, r)
		return nil, out, err
	}
	return rl, nil, nil
}

// landRemoteLoop lands a prepared transaction alone: fetch, merge,
// validate and push, again after a wait while the remote moved under the
// push, up to attempts times.
func (t *Tx) landRemoteLoop(ctx context.Context, rl *remoteLanding, o RemoteOptions, attempts int) (*RemoteLanded, error) {
	for rl.out.Attempts < attempts {
		if rl.out.Attempts > 0 {
			if err := remoteBackoff(ctx, rl.out.Attempts, o.Jitter, t); err != nil {
				return nil, err
			}
		}
		rl.out.Attempts++
		done, r, err := t.landOnce(ctx, rl)
		switch {
		case err != nil:
			return nil, err
		case r != nil:
			return rl.settle(ctx, t, Refused, r)
		case done:
			return rl.out, rl.err
		}
	}
	return rl.settle(ctx, t, Refused, remoteMoved(rl.l, attempts))
}

// remoteMoved is the refusal of a landing that found l's branch moved
// under each of its attempts.
func remoteMoved(l *landing.Repo, attempts int) *Refusal {
	return refuse(RemoteMoved, nil, "%s on %s moved under each of %d attempts (another host landed first each time); nothing was pushed. Land again, or give more attempts (--retries)", l.Ref, l.Remote, attempts)
}

// remoteLanding is a landing into a remote in progress: where it lands,
// what the preflight froze, and what it has found so far.
type remoteLanding struct {
	l    *landing.Repo
	snap gitbase.Snapshot // the base's repository at open
	w    *workspace
	set  *changeset.Set
	o    CommitOptions
	sc   *settlement
	out  *RemoteLanded
	err  error // the error of the settle that ended it, if any
}

// settle records an outcome that pushed nothing (no changes, refused).
func (rl *remoteLanding) settle(ctx context.Context, t *Tx, out Outcome, r *Refusal) (*RemoteLanded, error) {
	res, err := t.settle(ctx, out, r, rl.set, rl.sc)
	rl.out.Result = res
	return rl.out, err
}

// landedAlready reports the first outcome of a transaction that has
// already settled: landed into ref of remote (nothing to push), or
// anything else, which is an error. The receipt names the branch, not the
// remote: the commit is looked for on the branch the remote holds now, as
// FindLanded looks for an unrecorded landing, so a transaction landed into
// another remote's branch of the same name is not reported there.
func (t *Tx) landedAlready(ctx context.Context, remote, ref string) (*RemoteLanded, bool, error) {
	res, done, err := t.settledAlready()
	if err != nil || !done {
		return nil, done, err
	}
	if res.Receipt.LandedCommit != "" && res.Receipt.LandedBranch == ref {
		on, err := t.onRemoteBranch(ctx, remote, ref, res.Receipt.LandedCommit)
		if err != nil {
			return nil, true, err
		}
		if on {
			return &RemoteLanded{ID: t.ID(), Commit: res.Receipt.LandedCommit, Already: true, Result: res}, true, nil
		}
	}
	where := "to its base"
	if res.Receipt.LandedBranch != "" {
		where = fmt.Sprintf("into %s as %s", res.Receipt.LandedBranch, res.Receipt.LandedCommit)
		if r := t.landedRemote(); r != "" {
			where = fmt.Sprintf("into %s of %s as %s", res.Receipt.LandedBranch, r, res.Receipt.LandedCommit)
		}
		if res.Receipt.LandedBranch == ref {
			where += fmt.Sprintf(", which is not on %s of %s", ref, landing.Redact(remote))
		}
	}
	return nil, true, fmt.Errorf("transaction %s already settled as %s %s; nothing was pushed: only an open or refused transaction can land (to land the same change elsewhere, open a new transaction and make it again)", t.ID(), res.Outcome, where)
}

// landedRemoteKey is the member of a landing's committed event that names
// the remote it landed into (its URL, redacted).
const landedRemoteKey = "landed_remote"

// landedRemote is the remote the transaction's committed event says it
// landed into, "" when it names none (a landing recorded before the
// remote was).
func (t *Tx) landedRemote() string {
	evs, err := t.st.Events()
	if err != nil {
		return ""
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Event == eventCommitted {
			r, _ := evs[i].Detail[landedRemoteKey].(string)
			return r
		}
	}
	return ""
}

// onRemoteBranch fetches ref from remote, into a scratch repository that
// goes when it returns, and reports whether commit is on it.
func (t *Tx) onRemoteBranch(ctx context.Context, remote, ref, commit string) (bool, error) {
	scratch, err := os.MkdirTemp("", "airlock-landed-")
	if err != nil {
		return false, fmt.Errorf("make a scratch repository to look for %s on %s: %w", commit, ref, err)
	}
	defer os.RemoveAll(scratch)
	l, err := t.openLandingAt(ctx, filepath.Join(scratch, "repo.git"), remote, ref)
	if err != nil {
		return false, err
	}
	head, _, err := l.FetchHeads(ctx)
	if err != nil {
		return false, fmt.Errorf("transaction %s landed as %s; look for it on %s of %s: %w", t.ID(), commit, ref, l.Remote, err)
	}
	return l.Contains(ctx, head, commit)
}

// landOnce is one attempt of a landing: fetch the heads; find an earlier
// landing of the transaction; check protected paths under the head's
// gate; build and validate the candidate; commit it with its receipt note
// and push both. It is done when the transaction landed (now or before:
// rl.out says which, rl.err what recording it said); neither done nor
// refused when the remote moved under the push.
func (t *Tx) landOnce(ctx context.Context, rl *remoteLanding) (bool, *Refusal, error) {
	l, set, out := rl.l, rl.set, rl.out
	head, notes, err := l.FetchHeads(ctx)
	if r := timeoutRefusal(err); r != nil {
		return false, r, nil
	}
	if err != nil {
		return false, nil, err
	}
	if commit, err := l.FindLanded(ctx, head, rl.snap.Head, t.ID()); err != nil {
		return false, nil, err
	} else if commit != "" {
		// Landed before, by a process that did not live to record it:
		// report that commit and push nothing. Only when its receipt
		// proves it is this very transaction (another clone may have
		// landed one with the same id).
		res, err := t.recordFound(ctx, l, commit, notes, set)
		if err != nil {
			return false, nil, err
		}
		out.Commit, out.Already, out.Result = commit, true, res
		return true, nil, nil
	}
	gate, err := t.remoteGate(ctx, l, head, &rl.snap)
	if err != nil {
		return false, nil, err
	}
	rl.sc.approved = approval(rl.o, gate)
	if r, err := t.checkProtected(set, rl.o, gate); err != nil || r != nil {
		return false, r, err
	}
	cand, r, err := t.buildCandidate(ctx, l, rl.w, set, head, &rl.snap)
	if err != nil || r != nil {
		return false, r, err
	}
	if cmds := t.validators(rl.o, gate); len(cmds) > 0 {
		r, ran, err := t.validateTree(ctx, l, cmds, gate, &rl.snap)
		rl.sc.validated = ran
		if err != nil || r != nil {
			return false, r, err
		}
	}
	commit, err := t.commitCandidate(ctx, l, cand.tree, head, set)
	if err != nil {
		return false, nil, err
	}
	rc, data, err := t.landedReceipt(ctx, l, commit, head, notes, cand, set, rl.sc)
	if err != nil {
		return false, nil, err
	}
	noteCommit, err := l.AddNote(ctx, notes, commit, data)
	if err != nil {
		return false, nil, err
	}
	fault.Point("land-remote:built")
	pushed, err := l.PushAtomic(ctx, head, notes, commit, noteCommit)
	if err != nil {
		r, err := t.pushFailed(err)
		return false, r, err
	}
	if pushed == landing.PushMoved {
		t.event("remote_moved", map[string]any{"attempt": out.Attempts, "branch": l.Ref})
		return false, nil, nil
	}
	fault.Point("land-remote:pushed")
	out.Commit = commit
	out.Result, rl.err = t.recordLanded(ctx, l, rc, data, set, rl.sc)
	warnConfirmed(out.Result, l, pushed)
	t.warnIgnored(out.Result, l, cand)
	return true, nil, nil
}

// warnConfirmed says, on a landing's result, that git never heard the
// server's answer to the push that landed it.
func warnConfirmed(res *Result, l *landing.Repo, pushed landing.Pushed) {
	if res != nil && pushed == landing.PushConfirmed {
		res.Warnings = append(res.Warnings, fmt.Sprintf("git did not hear %s's answer to the push, but %s and %s there are at the values pushed: it landed", l.Remote, l.Ref, landing.NotesRef))
	}
}

// warnIgnored says, on a landing's result, which changed paths it left
// out as git ignores them.
func (t *Tx) warnIgnored(res *Result, l *landing.Repo, cand *candidate) {
	if res != nil && len(cand.ignored) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("not landed, as git ignores them in %s and %s does not track them: %s", t.Base(), l.Ref, strings.Join(cand.ignored, ", ")))
	}
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

// openLanding resolves the remote against the base's repository and makes
// (or reuses) the transaction's private repository.
func (t *Tx) openLanding(ctx context.Context, remote, ref string) (*landing.Repo, error) {
	return t.openLandingAt(ctx, t.st.Path(remoteRepoDir), remote, ref)
}

// openLandingAt is openLanding with its private repository at dir.
func (t *Tx) openLandingAt(ctx context.Context, dir, remote, ref string) (*landing.Repo, error) {
	return landing.Open(ctx, dir, t.Base(), t.Base(), remote, ref)
}

// remoteGate is the project's gate as the branch head holds it: its
// .airlock.toml there (protect, validate), on top of what the transaction
// recorded at open. A config that does not parse leaves the recorded gate
// alone, as a commit does with a base's broken config.
func (t *Tx) remoteGate(ctx context.Context, l *landing.Repo, head string, snap *gitbase.Snapshot) (*project.Project, error) {
	root := t.Base()
	if t.rec.Project != "" {
		root = string(t.rec.Project)
	}
	gate := &project.Project{Root: root, Under: string(t.rec.Under), Cfg: config.Default()}
	path := projectPrefix(snap.Prefix, gate.Under) + config.FileName
	ents, err := l.LsTree(ctx, head, []string{path})
	if err != nil {
		return nil, err
	}
	e, ok := ents[path]
	if !ok || e.Kind() != manifest.KindFile {
		return gate, nil
	}
	data, err := l.CatBlob(ctx, e.OID)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, head, err)
	}
	cfg, err := config.Parse(l.Ref+":"+path, data)
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

// candidate is a landing's tree and what it did to the touched paths.
type candidate struct {
	tree          string
	before, after []landing.TreeEntry // per change, as the head holds it and as the tree does
	merged        []string            // paths three-way merged with the head's version
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
func (t *Tx) buildCandidate(ctx context.Context, l *landing.Repo, w *workspace, set *changeset.Set, head string, snap *gitbase.Snapshot) (*candidate, *Refusal, error) {
	idx := t.st.Path(remoteIndexFile)
	os.Remove(idx)
	ir := l.Git.WithIndex(idx)
	if _, err := ir.Run(ctx, "read-tree", head); err != nil {
		return nil, nil, fmt.Errorf("read %s into the landing's index: %w", head, err)
	}
	objects := w.path(objectsDir)
	paths := make([]string, len(set.Changes))
	for i, c := range set.Changes {
		paths[i] = snap.Prefix + c.Path
	}
	now, err := l.LsTree(ctx, head, paths)
	if err != nil {
		return nil, nil, err
	}
	then, err := l.LsTree(ctx, snap.Head, paths)
	if err != nil {
		return nil, nil, err
	}
	want, err := l.ResultEntries(ctx, set, objects)
	if err != nil {
		return nil, nil, err
	}
	drifted, err := driftedAncestors(ctx, l, head, snap.Head, paths)
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
		if ignored[c.Path] && h.Kind() == manifest.KindNone && b.Kind() == manifest.KindNone {
			cand.after = append(cand.after, h)
			cand.ignored = append(cand.ignored, c.Path)
			continue
		}
		if drifted[p] {
			unmergeable = append(unmergeable, c.Path)
			continue
		}
		if h.Kind() == manifest.KindDir || r.Kind() == manifest.KindDir {
			// git keeps no directories, only what is in them: a
			// directory is the change set's children's business, unless
			// a file or link is in the way on one side.
			if (h.Kind() == manifest.KindDir || h.Kind() == manifest.KindNone) && (r.Kind() == manifest.KindDir || r.Kind() == manifest.KindNone) {
				cand.after = append(cand.after, h)
				continue
			}
		}
		switch {
		case h == b || h == r:
			// The head did not touch the path since the transaction's
			// base commit, or already holds the result.
		case c.Op == changeset.Modify && c.Base.Kind == manifest.KindFile && c.Result.Kind == manifest.KindFile && h.Kind() == manifest.KindFile:
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
		case r.Mode == "" || r.Kind() == manifest.KindDir:
			// Gone, or a file or link made a directory: git keeps the
			// directory's children, which are changes of their own.
			fmt.Fprintf(&gone, "0 %s\t%s\x00", zero, p)
		default:
			fmt.Fprintf(&info, "%s %s\t%s\x00", r.Mode, r.OID, p)
		}
	}
	// Removals first: a directory's children leave the index before a
	// file takes its name, and a file leaves before its name is a
	// directory's.
	batch := append(gone.Bytes(), info.Bytes()...)
	switch {
	case len(unmergeable) > 0:
		return nil, refuse(BaseDrift, append(unmergeable, conflicts...), "changed on %s since the commit the transaction opened at (%.12s), and cannot be merged", l.Ref, snap.Head), nil
	case len(conflicts) > 0:
		return nil, refuse(MergeConflict, conflicts, "changed on %s since the commit the transaction opened at (%.12s), with edits that overlap the transaction's", l.Ref, snap.Head), nil
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
	// Over the paths the landing changed only, which is what `git
	// diff-tree` of the landed commit against its parent lists: so anyone
	// can bind the commit's tree to its receipt (landing.TreeBinding). A
	// path the head already held as the result would count on both sides
	// and be invisible to diff-tree.
	var changed []string
	var before, after []landing.TreeEntry
	for i := range cand.before {
		if i < len(cand.after) && cand.before[i] != cand.after[i] {
			changed = append(changed, paths[i])
			before, after = append(before, cand.before[i]), append(after, cand.after[i])
		}
	}
	cand.beforeDigest = landing.EntriesGitDigest(changed, before)
	cand.afterDigest = landing.EntriesGitDigest(changed, after)
	return cand, nil, nil
}

// driftedAncestors are the paths (of paths, repository paths) under a
// directory that head holds as a file, link or submodule where base (the
// commit the transaction opened at) held a directory or nothing, and that
// the change set does not change itself: the head changed what the path
// lives in, which a check of the path alone cannot see (it is absent on
// both sides). Applied, the change would silently replace the head's file
// with the directory its path needs. A local commit refuses the same
// shape BaseDrift, naming the changed path; so does this. An ancestor the
// change set changes is left to the check of that path.
func driftedAncestors(ctx context.Context, l *landing.Repo, head, base string, paths []string) (map[string]bool, error) {
	changed := make(map[string]bool, len(paths))
	for _, p := range paths {
		changed[p] = true
	}
	seen := map[string]bool{}
	var dirs []string
	for _, p := range paths {
		for d := path.Dir(p); d != "." && d != "/" && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			if !changed[d] {
				dirs = append(dirs, d)
			}
		}
	}
	if len(dirs) == 0 {
		return nil, nil
	}
	now, err := l.LsTree(ctx, head, dirs)
	if err != nil {
		return nil, err
	}
	then, err := l.LsTree(ctx, base, dirs)
	if err != nil {
		return nil, err
	}
	bad := func(d string) bool {
		h, b := now[d].Kind(), then[d].Kind()
		return h != manifest.KindDir && h != manifest.KindNone && (b == manifest.KindDir || b == manifest.KindNone)
	}
	out := map[string]bool{}
	for _, p := range paths {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if !changed[d] && bad(d) {
				out[p] = true
				break
			}
		}
	}
	return out, nil
}

// mergeRemote three-way merges a file the head changed: ancestor the
// content at open (the originals a local commit kept, else the blob of the
// commit the base was at when the path was clean then), ours the frozen
// result, theirs the head's blob. Only the executable bit of a mode is
// git's, so only it is merged.
func (t *Tx) mergeRemote(ctx context.Context, l *landing.Repo, orig *originals.Store, c changeset.Change, h landing.TreeEntry, objects string) (landing.TreeEntry, mergeHow, error) {
	anc, ok, err := t.ancestor(ctx, orig, c.Base)
	if err != nil {
		return landing.TreeEntry{}, 0, fmt.Errorf("read the merge base of %s: %w", c.Path, err)
	}
	if !ok {
		return landing.TreeEntry{}, mergeImpossible, nil
	}
	exec := func(m fs.FileMode) fs.FileMode { return m & 0o100 }
	hMode := fs.FileMode(0)
	if h.Mode == "100755" {
		hMode = 0o100
	}
	mode, ok := merge.Mode(exec(c.Base.Mode), exec(c.Result.Mode), hMode)
	if !ok {
		return landing.TreeEntry{}, mergeConflict, nil
	}
	ours, err := os.ReadFile(changeset.ObjectPath(objects, c.Result.Digest))
	if err != nil {
		return landing.TreeEntry{}, 0, fmt.Errorf("read the frozen content of %s: %w", c.Path, err)
	}
	theirs, err := l.CatBlob(ctx, h.OID)
	if err != nil {
		return landing.TreeEntry{}, 0, fmt.Errorf("read %s on %s: %w", c.Path, l.Ref, err)
	}
	content, how, err := mergeContent(anc, ours, theirs)
	if err != nil || how != merged {
		return landing.TreeEntry{}, how, err
	}
	oid, err := l.WriteBlob(ctx, content)
	if err != nil {
		return landing.TreeEntry{}, 0, err
	}
	return landing.TreeEntry{Mode: landing.GitFileMode(mode | 0o644), OID: oid}, merged, nil
}

// validateTree checks the candidate out of the landing's index into a
// throw-away directory and runs the validators there, at the project
// root's place in it.
func (t *Tx) validateTree(ctx context.Context, l *landing.Repo, cmds []string, gate *project.Project, snap *gitbase.Snapshot) (*Refusal, []string, error) {
	return t.interruptible(ctx, func(ctx context.Context) (*Refusal, []string, error) {
		return t.validateTreeIn(ctx, l, cmds, gate, snap)
	})
}

// validateTreeIn is validateTree with SIGINT and SIGTERM caught.
func (t *Tx) validateTreeIn(ctx context.Context, l *landing.Repo, cmds []string, gate *project.Project, snap *gitbase.Snapshot) (*Refusal, []string, error) {
	dir := t.st.Path(candidateDir)
	if err := os.RemoveAll(dir); err != nil {
		return nil, nil, fmt.Errorf("remove the old candidate %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("make the candidate %s: %w", dir, err)
	}
	defer os.RemoveAll(dir)
	ir := l.Git.WithIndex(t.st.Path(remoteIndexFile))
	if _, err := ir.Run(ctx, "--work-tree="+dir, "checkout-index", "-a", "-f"); err != nil {
		return nil, nil, fmt.Errorf("check the candidate out into %s: %w", dir, err)
	}
	top := strings.TrimSuffix(t.Base(), "/"+strings.TrimSuffix(snap.Prefix, "/"))
	sub := strings.TrimSuffix(projectPrefix(snap.Prefix, gate.Under), "/")
	return t.runValidators(ctx, cmds, gate, candidateRun{dir: dir, base: top, sub: sub, log: t.st.Path(validateLog)})
}

// commitCandidate makes the landed commit: the candidate tree, parent the
// head, and the transaction's trailer.
func (t *Tx) commitCandidate(ctx context.Context, l *landing.Repo, tree, head string, set *changeset.Set) (string, error) {
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
	fmt.Fprintf(&msg, ".\n\n%s: %s\n", landing.TxTrailer, t.ID())
	args := append(landing.GitIdentity(ctx, t.Base()), "commit-tree", tree, "-p", head, "-F", "-")
	out, err := l.Git.RunInput(ctx, []byte(msg.String()), args...)
	if err != nil {
		return "", fmt.Errorf("make the landed commit: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// landedReceipt seals the receipt of a landing: previous is the receipt
// of the newest airlock commit on the head's first-parent history.
func (t *Tx) landedReceipt(ctx context.Context, l *landing.Repo, commit, head, notes string, cand *candidate, set *changeset.Set, sc *settlement) (*receipt.Receipt, []byte, error) {
	prev, err := chainPrevious(ctx, l, head, notes)
	if err != nil {
		return nil, nil, err
	}
	return t.sealLanded(ctx, l, commit, prev, cand, set, sc)
}

// chainPrevious is the digest of the receipt of the newest airlock commit
// on head's first-parent history, "" when there is none.
func chainPrevious(ctx context.Context, l *landing.Repo, head, notes string) (string, error) {
	prev, err := l.ChainHead(ctx, head, notes)
	var bad *landing.UnverifiedNoteError
	if errors.As(err, &bad) {
		return "", stepErrorf("%w; see %s", err, Step{Kind: StepRemoteLog, Remote: bad.Remote, Branch: bad.Branch()})
	}
	return prev, err
}

// sealLanded seals the receipt of commit, landed into l's branch, whose
// previous is prev; it says how the validators ran (sc.batchTree).
func (t *Tx) sealLanded(ctx context.Context, l *landing.Repo, commit, prev string, cand *candidate, set *changeset.Set, sc *settlement) (*receipt.Receipt, []byte, error) {
	rc := t.newReceipt(Committed, set, sc, cand.beforeDigest, cand.afterDigest, prev)
	rc.LandedBranch, rc.LandedCommit = l.Ref, commit
	if len(rc.Validators) > 0 {
		rc.Validated = receipt.ValidatedAlone
		if sc.batchTree != "" {
			rc.Validated, rc.BatchTree = receipt.ValidatedBatch, sc.batchTree
		}
	}
	// Signed here, before the push: a key that cannot sign refuses the
	// landing with nothing pushed.
	data, err := t.sealReceipt(ctx, rc, "")
	if err != nil {
		return nil, nil, err
	}
	return rc, data, nil
}

// recordLanded settles the transaction as committed into the remote: its
// receipt is the note just pushed. The base was not touched and its own
// receipt chain does not move; the staged workspace goes.
func (t *Tx) recordLanded(ctx context.Context, l *landing.Repo, rc *receipt.Receipt, data []byte, set *changeset.Set, sc *settlement) (*Result, error) {
	path, err := t.writeReceipt(data)
	if err != nil {
		return nil, fmt.Errorf("%s landed as %s, but its receipt was not written here: %w", t.ID(), rc.LandedCommit, err)
	}
	res, err := t.settled(Committed, nil, rc, path, set, sc, map[string]any{"landed_branch": rc.LandedBranch, "landed_commit": rc.LandedCommit, landedRemoteKey: l.URL()})
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
func (t *Tx) recordFound(ctx context.Context, l *landing.Repo, commit, notes string, set *changeset.Set) (*Result, error) {
	notMine := func(why string) error {
		return fmt.Errorf("commit %s on %s carries %s: %s, but %s; transaction %s was not landed and is kept: discard it, or open it again under another id (--id) and land that", commit, l.Ref, landing.TxTrailer, t.ID(), why, t.ID())
	}
	ns, err := l.NotesOf(ctx, notes)
	if err != nil {
		return nil, err
	}
	blob, ok := ns[commit]
	if !ok {
		return nil, notMine("it has no receipt note")
	}
	data, err := l.CatBlob(ctx, blob)
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
	r, err := t.recordLanded(ctx, l, rc, data, set, &settlement{validated: rc.Validators})
	if r != nil {
		r.Repeat = true
	}
	return r, err
}
