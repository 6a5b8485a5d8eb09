package airlock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/airlockdev/airlock/internal/basecheck"
	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// workspace is where a preflight keeps what it makes: the frozen change
// set and the merged content (changes/), the validation candidate, the
// validators' log. A commit's is the transaction's own state, which the
// apply goes on to use; a check's is a scratch directory of its own, so
// that a check never disturbs a commit of the same transaction running at
// the same time.
type workspace struct {
	dir string
	log string
	// base is the path through which this process reads the base: its
	// own path, except inside `airlock run`'s same-path view, where that
	// path shows the staged workspace (see ownerView).
	base string
	// limited says the base cannot be seen at all: only the checks that
	// need no base are made (see Check).
	limited bool
}

func (w *workspace) path(name string) string { return filepath.Join(w.dir, filepath.FromSlash(name)) }

// commitSpace is the workspace of a commit: the transaction's own state,
// and the base at its own path.
func (t *Tx) commitSpace() *workspace {
	return &workspace{dir: t.StateDir(), log: t.st.Path(validateLog), base: t.Base()}
}

// preflight is what the checks found, and what a commit that passed them
// applies.
type preflight struct {
	set      *changeset.Set // as frozen
	prepared *changeset.Set // set with the merged results in place
	ops      []journal.Op   // for the journal, Before as the base is now
	escapes  []string       // changed paths that would leave the base
	refusal  *Refusal       // the first check that failed, if any
	// validated are the validators that ran, in order.
	validated []string
	// approved says the commit's approval of protected changes stands
	// (see approval); until the gate is read, only the user's does.
	approved bool
	// merged are the changed paths that had drifted in the base and were
	// three-way merged; the prepared change set holds their results.
	merged []string
	// root and base are open and locked from the lock step on, until
	// release: a commit applies under the very lock its checks ran under.
	root   *safefs.Root
	base   *state.Base
	unlock func()
}

// release closes the base and lets go of its lock.
func (p *preflight) release() {
	if p.root != nil {
		p.root.Close()
	}
	if p.unlock != nil {
		p.unlock()
	}
}

// preflight is the one preflight of every settle that lands a change set
// — a commit, a check, a land, an undo and a landing into a remote — made
// before anything is journaled or pushed, in this one order:
//
//   - the transaction: an interrupted apply must be recovered first (the
//     refusal is the error; there is no change set to settle);
//   - compute the change set from w's base (empty: nothing else is
//     checked) and freeze it into w (StagedChanged);
//   - stagedChecks, each in turn: the checks of the frozen change set
//     that need neither the base nor the remote;
//   - conflict markers a rebase left that remain in the frozen content
//     (Conflicted).
//
// A check added to stagedChecks guards every way a change set lands. What
// the target adds comes after: preflightLocal's checks against the base,
// a remote landing's against the branch head it fetched.
func (t *Tx) preflight(ctx context.Context, w *workspace, o CommitOptions) (*preflight, error) {
	if err := t.notInterrupted(); err != nil {
		return nil, err
	}
	set, err := t.diffFrom(ctx, w.base)
	if err != nil {
		return nil, err
	}
	p := &preflight{set: set, prepared: set, approved: o.Approve && !o.AgentApproval}
	if t.part != nil {
		// A part: the selected changes of the whole's change set, and a
		// review binding checked on the whole it was given for.
		if p.refusal, err = t.takePart(ctx, w, p, &o); err != nil || p.refusal != nil {
			return p, err
		}
		set = p.set
	} else if set.Empty() {
		return p, nil
	} else if err := t.freeze(ctx, w, set); err != nil {
		if r, ok := stagedChanged(err); ok {
			p.refusal = r
			return p, nil
		}
		return nil, err
	}
	for _, check := range stagedChecks {
		r, err := check(ctx, t, set, o)
		if err != nil {
			return nil, err
		}
		if r != nil {
			p.refusal = r
			return p, nil
		}
	}
	// What lands is the frozen content: a marker the command writes back
	// after this is not in it.
	r, err := t.whole().checkConflicts(set, w.path(objectsDir))
	if err != nil {
		return nil, err
	}
	p.refusal = r
	return p, nil
}

// stagedChecks are the checks of a frozen change set that need neither
// the base nor the remote, in the order every preflight makes them: a
// change set bound to a review must still be the one reviewed; the
// command must not have changed the repository it shares with the base;
// nothing airlock never applies (FIFOs, sockets, devices).
var stagedChecks = []func(ctx context.Context, t *Tx, set *changeset.Set, o CommitOptions) (*Refusal, error){
	func(_ context.Context, t *Tx, set *changeset.Set, o CommitOptions) (*Refusal, error) {
		return checkReviewed(t.ID(), set, o), nil
	},
	func(ctx context.Context, t *Tx, _ *changeset.Set, _ CommitOptions) (*Refusal, error) {
		return t.whole().repoRefusal(ctx)
	},
	func(_ context.Context, _ *Tx, set *changeset.Set, _ CommitOptions) (*Refusal, error) {
		return checkUnsupported(set), nil
	},
}

// notInterrupted refuses a transaction whose own apply was interrupted:
// it must be recovered before anything else is done with it.
func (t *Tx) notInterrupted() error {
	status, err := t.Status()
	if err != nil {
		return err
	}
	if status == StatusInterrupted {
		return interrupted(t.Base(), t.ID())
	}
	return nil
}

// checkUnsupported refuses the entries airlock never applies.
func checkUnsupported(set *changeset.Set) *Refusal {
	if len(set.Unsupported) == 0 {
		return nil
	}
	var paths []string
	for _, u := range set.Unsupported {
		paths = append(paths, string(u))
	}
	return refuse(UnsupportedEntry, paths, "the staged workspace holds FIFOs, sockets or device nodes, which airlock never applies; remove them")
}

// preflightLocal is the preflight of a change set that lands in its base
// (Commit, and so Land and Undo, and Check): the one preflight, then,
// with the base locked:
//
//   - another transaction's apply in flight;
//   - open the base and check its identity;
//   - drift, merging what drifted where it can (BaseDrift, MergeConflict);
//   - protected paths, boundaries, shared inodes;
//   - validate a candidate tree: the base now plus the prepared change set.
//
// A limited workspace skips what needs the base (its identity, drift and
// merges, shared inodes) and validates the staged tree.
//
// Whether the transaction is already settled, and whether to wait for
// another settle of it, is the caller's: a commit waits and repeats the
// first outcome, a check takes no lock and has nothing to check.
//
// The caller releases the result, which may hold the base's lock.
func (t *Tx) preflightLocal(ctx context.Context, w *workspace, o CommitOptions) (*preflight, error) {
	p, err := t.preflight(ctx, w, o)
	if err != nil || p.set.Empty() || p.refusal != nil {
		return p, err
	}
	if p.base, err = t.stateBase(); err != nil {
		return nil, err
	}
	if err := t.checkBaseState(p.base); err != nil {
		return nil, err
	}
	if p.unlock, err = p.base.Lock(ctx); err != nil {
		return nil, err
	}
	if p.refusal, err = t.checkLocked(ctx, w, p, o); err != nil {
		p.release()
		return nil, err
	}
	return p, nil
}

// checkLocked is the preflight from the in-flight check on, with the base
// locked.
func (t *Tx) checkLocked(ctx context.Context, w *workspace, p *preflight, o CommitOptions) (*Refusal, error) {
	id, ok, err := p.base.Inflight()
	if err != nil {
		return nil, err
	}
	if ok {
		return interrupted(t.Base(), id), nil
	}
	// An apply in flight that another base state marks and that names
	// this base's path or identity refuses too. Its lock is not waited
	// for while this one is held: such an apply is never one that is
	// merely running (a commit over another directory at this path stops
	// at its identity check before it marks anything).
	if others, err := t.store.st().InflightNaming(ctx, t.Base(), t.baseIdentity(), p.base, false); err != nil {
		return nil, err
	} else if len(others) > 0 {
		return interruptedElsewhere(t.Base(), t.baseIdentity(), others[0]), nil
	}
	// Where the base cannot be seen, the candidate is the staged tree: the
	// base at open plus the change set.
	from := t.Path()
	if !w.limited {
		r, err := t.checkBase(ctx, w, p)
		if err != nil || r != nil {
			return r, err
		}
		from = w.base
	}
	// The gate is the project's as the base holds it now, not as the
	// transaction's state says it was (see projectNow).
	gate, err := t.projectNow(w)
	if err != nil {
		return nil, err
	}
	p.approved = approval(o, gate)
	if r, err := t.checkProtected(p.set, o, gate); err != nil || r != nil {
		return r, err
	}
	if r := checkBoundary(p.set, p.escapes); r != nil {
		return r, nil
	}
	if !w.limited {
		if r := checkSharedInode(p.root, p.set, t.Path(), w.path(objectsDir)); r != nil {
			return r, nil
		}
	}
	r, ran, err := t.validate(ctx, w, from, p.ops, o, gate)
	p.validated = ran
	return r, err
}

// checkBase opens the base, checks that it is still the directory the
// transaction opened, and compares the change set with it, merging what
// drifted where it can. It sets p's root, operations, prepared change set
// and the paths that escape the base.
func (t *Tx) checkBase(ctx context.Context, w *workspace, p *preflight) (*Refusal, error) {
	// Through the descriptor, never the path again: see openBase.
	root, r, err := t.openBase(w.base)
	if err != nil || r != nil {
		return r, err
	}
	p.root = root
	ops, drifted, escapes, err := basecheck.Drift(root, p.set)
	if err != nil {
		return nil, err
	}
	p.escapes = escapes
	if len(drifted) > 0 {
		merged, prepared, r, err := t.mergeDrifted(ctx, root, w.path(objectsDir), p.set, drifted)
		if err != nil || r != nil {
			return r, err
		}
		ops, p.prepared = append(ops, merged...), prepared
		for _, op := range merged {
			p.merged = append(p.merged, op.Path)
		}
	}
	p.ops = ops
	return nil, nil
}

// freeze copies the change set's staged bytes into w and saves the frozen
// set beside them. A refused transaction committed again is frozen afresh
// from its staged workspace.
func (t *Tx) freeze(ctx context.Context, w *workspace, set *changeset.Set) error {
	dir := w.path(changesDir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear frozen change set %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := changeset.Freeze(ctx, set, t.contentDir(), w.path(objectsDir)); err != nil {
		return err
	}
	return set.Save(w.path(changeSetFile))
}

// checkIdentity refuses when the base path now names another directory
// than the one opened (it was moved away and something else put there),
// or one that cannot be told from another (see driftIdentity).
func (t *Tx) checkIdentity() *Refusal {
	now, err := identity(t.Base())
	if err != nil {
		return refuse(BaseDrift, []string{"."}, "%s is no longer the directory the transaction opened (%v)", t.Base(), unwrapPathErr(err))
	}
	return t.driftIdentity(now, false)
}

// driftIdentity refuses BaseDrift unless now is the directory the
// transaction opened: the same file system (by its own identity, whatever
// its device number is after a reboot) and inode. Where only device
// numbers were recorded, the same inode under another device number
// cannot be told from another directory: refused too, unless confirmed
// (recover --moved).
func (t *Tx) driftIdentity(now state.Identity, confirmed bool) *Refusal {
	switch t.baseIdentity().Match(now) {
	case state.Same:
		return nil
	case state.Unknown:
		if confirmed {
			return nil
		}
		return refuse(BaseDrift, []string{"."}, "%s cannot be told from another directory: the transaction recorded it as %s and it is %s now, and its file system has no identity of its own that would say whether it is the same one mounted again", t.Base(), t.baseIdentity(), now)
	}
	return refuse(BaseDrift, []string{"."}, "%s is no longer the directory the transaction opened (it was %s, it is %s)", t.Base(), t.baseIdentity(), now)
}

// checkProtected refuses a change under a protected selector unless the
// commit was approved (see approval). The selectors are the union of those recorded at
// open and those of the project config that governs the base now (gate),
// defaults included: neither an edit of the transaction's state, nor a
// flag or negation given at open, nor a change the transaction makes to
// the config can drop one.
func (t *Tx) checkProtected(set *changeset.Set, o CommitOptions, gate *project.Project) (*Refusal, error) {
	if approval(o, gate) {
		return nil, nil
	}
	hit, err := t.protectedPaths(set, gate)
	if err != nil || len(hit) == 0 {
		return nil, err
	}
	r := refuse(ProtectedPathNotApproved, hit, "the change set touches protected paths")
	r.Remedy = Remedy{Kind: RemedyApprove, Tx: t.ID()}
	if o.AgentApproval {
		// The agent cannot approve them: say how a person does.
		r.Remedy.Kind = RemedyUserApprove
	}
	return r, nil
}

// approval says whether o approves protected changes under gate: the
// user's approval always, an agent's own only where the project's config
// (as the base holds it now) lets agents approve.
func approval(o CommitOptions, gate *project.Project) bool {
	return o.Approve && (!o.AgentApproval || gate.Cfg.AgentsApprove)
}

// protectedPaths are the changed paths of set that protection holds,
// sorted: the transaction's recorded selectors and the project's as gate
// gives them now, a path matched directly or reached through a symlink of
// the result tree.
func (t *Tx) protectedPaths(set *changeset.Set, gate *project.Project) ([]string, error) {
	prot, err := project.NewSelector(t.rec.Protect, string(t.rec.Under))
	if err != nil {
		return nil, fmt.Errorf("protected selectors in %s: %w", t.st.Path(recordFile), err)
	}
	// The project's own protection, as its config gives it now: the
	// default protected paths unless the config drops them, then its own.
	// Open flags (an agent's `--no-default-protect`, or negations it passes
	// to MCP open) shape only the recorded list above and never this one.
	var own []string
	if gate.Cfg.DefaultProtect {
		own = append(own, DefaultProtect...)
	}
	own = append(own, gate.Cfg.Protect...)
	now, err := project.NewSelector(own, gate.Under)
	if err != nil {
		return nil, fmt.Errorf("protected selectors in %s: %w", gate.Cfg.Path, err)
	}
	var hit []string
	for _, c := range set.Changes {
		isDir := c.Result.Kind == manifest.KindDir || (c.Result.Kind == manifest.KindNone && c.Base.Kind == manifest.KindDir)
		if prot.Match(c.Path, isDir) || now.Match(c.Path, isDir) {
			hit = append(hit, c.Path)
			continue
		}
		if c.Result.Kind == manifest.KindSymlink && (prot.MatchLink(c.Path) || now.MatchLink(c.Path)) {
			hit = append(hit, c.Path)
		}
	}
	// Protected paths reached through a symlink of the result tree show
	// content the change set put elsewhere.
	links, err := t.links()
	if err != nil {
		return nil, err
	}
	aliased, err := project.LinkAliases(set, t.Base(), links, func() (*manifest.Manifest, error) { return t.loadManifest(baseManifestFile) },
		func(rel string, isDir bool) bool { return prot.Match(rel, isDir) || now.Match(rel, isDir) })
	if err != nil {
		return nil, err
	}
	for _, p := range aliased {
		if !slices.Contains(hit, p) {
			hit = append(hit, p)
		}
	}
	sort.Strings(hit)
	return hit, nil
}

// checkBoundary refuses any changed path that is not a plain relative path
// inside the base, that would be reached through a symlink in the base, or
// that lies beneath a symlink the change set itself creates.
func checkBoundary(set *changeset.Set, escapes []string) *Refusal {
	if bad := basecheck.Boundary(set, escapes); len(bad) > 0 {
		return refuse(BoundaryEscape, bad, "these paths would leave the base or be reached through a symlink")
	}
	return nil
}

// checkSharedInode refuses when a staged or frozen file is the same inode
// as its base file: a write to one would already have changed the other.
func checkSharedInode(root *safefs.Root, set *changeset.Set, staged, objects string) *Refusal {
	if shared := basecheck.SharedInodes(root, set, staged, objects); len(shared) > 0 {
		return refuse(SharedInode, shared, "a staged file is the very inode of its base file (a hard link); the staging was not isolated")
	}
	return nil
}
