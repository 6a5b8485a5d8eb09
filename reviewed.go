package airlock

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/patch"
	"github.com/airlockdev/airlock/internal/project"
)

// ChangeDigest is the digest of the change set as it is now in the staged
// workspace: the diff_digest a commit made now would record. A caller that
// shows a change set to a person (the review page, `airlock show --json`)
// hands it back as CommitOptions.ExpectDiffDigest, so that what lands is
// what was reviewed.
func (t *Tx) ChangeDigest(ctx context.Context) (string, error) {
	set, err := t.diff(ctx)
	if err != nil {
		return "", err
	}
	// The digest covers each file's content, which the freeze hashes: here
	// it is hashed the same way, from the same safe read.
	for i := range set.Changes {
		c := &set.Changes[i]
		if c.Result.Kind != manifest.KindFile {
			continue
		}
		f, err := t.openStaged(c.Path, c.Result)
		if err != nil {
			return "", fmt.Errorf("transaction %s: read staged %s: %w", t.ID(), c.Path, err)
		}
		c.Result.Digest, err = manifest.HashReader(f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("transaction %s: read staged %s: %w", t.ID(), c.Path, err)
		}
	}
	return set.Digest(), nil
}

// ReviewDiff writes the change set of a transaction not yet settled, as
// Diff does, and returns the digest of exactly the change set it wrote: the
// digest a person who read it hands back as CommitOptions.ExpectDiffDigest.
//
// Both come from one snapshot. The staged files are frozen into a scratch
// object store through the freeze a commit makes (beneath the staged tree,
// no symlink followed, only the very file the change set measured, read
// once), the digest is taken from that frozen set, and the patch's new side
// is read from the frozen objects, never from the staged tree again: an
// agent that rewrites a staged file while it is shown (and back afterwards)
// cannot make the patch show other bytes than the digest names. The
// scratch store is removed before ReviewDiff returns. The commit freezes
// the staged tree afresh and compares digests, so what lands is what was
// written here.
//
// A staged file that changes while it is frozen is a *Refusal of kind
// StagedChanged: the agent is still writing, and nothing was written to w.
func (t *Tx) ReviewDiff(ctx context.Context, w io.Writer, format DiffFormat) (_ string, _ []string, err error) {
	defer exported(&err)
	digest, notes, _, err := t.review(ctx, w, format, false)
	return digest, notes, err
}

// Approval is what approving a transaction's protected changes approves.
type Approval struct {
	// Paths are the changed paths protection holds (the transaction's
	// selectors and the project's, as the base's config says now, as a
	// commit checks them), sorted; none means the change set needs no
	// approval.
	Paths []string
	// Digest is the digest of the whole change set they belong to, the
	// CommitOptions.ExpectDiffDigest that binds a commit to what was
	// approved: any later change to the change set refuses it ReviewStale.
	Digest string
	// AgentsApprove says the project's config lets an agent's own
	// approval stand (agents_approve = true; see CommitOptions.AgentApproval).
	AgentsApprove bool
}

// ReviewApproval writes the patch of the protected changes of a
// transaction not yet settled to w and says what approving them would
// approve. The patch, the paths and the digest come from one frozen
// snapshot, as ReviewDiff's do: a person shown them approves exactly the
// change set that a commit bound to Approval.Digest lands.
func (t *Tx) ReviewApproval(ctx context.Context, w io.Writer) (_ *Approval, err error) {
	defer exported(&err)
	a := &Approval{}
	var gate *reviewGate
	a.Digest, _, gate, err = t.review(ctx, w, DiffPatch, true)
	if err != nil {
		return nil, err
	}
	a.Paths, a.AgentsApprove = gate.paths, gate.Cfg.AgentsApprove
	return a, nil
}

// review is ReviewDiff; with protectedOnly it writes only the changes
// protection holds, and returns the gate it read them with, their paths
// in gate.paths.
func (t *Tx) review(ctx context.Context, w io.Writer, format DiffFormat, protectedOnly bool) (string, []string, *reviewGate, error) {
	st, err := t.Status()
	if err != nil {
		return "", nil, nil, err
	}
	if st != StatusOpen && st != StatusRefused {
		return "", nil, nil, fmt.Errorf("transaction %s is %s: it has no change set to review", t.ID(), st)
	}
	set, err := t.diff(ctx)
	if err != nil {
		return "", nil, nil, err
	}
	if testHookReviewMeasured != nil {
		testHookReviewMeasured()
	}
	dir, err := os.MkdirTemp(t.StateDir(), "review-")
	if err != nil {
		return "", nil, nil, fmt.Errorf("review transaction %s: %w", t.ID(), err)
	}
	defer os.RemoveAll(dir)
	objects := filepath.Join(dir, "objects")
	if err := changeset.Freeze(ctx, set, t.contentDir(), objects); err != nil {
		if r, ok := stagedChanged(err); ok {
			return "", nil, nil, r
		}
		return "", nil, nil, err
	}
	changes := set.Changes
	var gate *reviewGate
	if protectedOnly {
		// Matched on the frozen set, as the commit matches them.
		p, err := t.projectNow(&workspace{base: t.Base()})
		if err != nil {
			return "", nil, nil, err
		}
		gate = &reviewGate{Project: p}
		if gate.paths, err = t.protectedPaths(set, p); err != nil {
			return "", nil, nil, err
		}
		changes = nil
		for _, c := range set.Changes {
			if slices.Contains(gate.paths, c.Path) {
				changes = append(changes, c)
			}
		}
	}
	// Past this point nothing reads the staged tree: a pause here lets a
	// test rewrite it, as an agent watching its reads would.
	if testHookReviewFrozen != nil {
		testHookReviewFrozen()
	}
	fault.Point("review-frozen")
	orig, err := t.originals()
	if err != nil {
		return "", nil, nil, err
	}
	files := make([]patch.File, len(changes))
	for i, c := range changes {
		c := c
		old := func() (io.ReadCloser, error) { return t.openAtOpen(orig, c.Base) }
		frozen := func() (io.ReadCloser, error) { return os.Open(changeset.ObjectPath(objects, c.Result.Digest)) }
		files[i] = patch.File{Path: c.Path, Old: side(c.Base, old), New: side(c.Result, frozen)}
	}
	notes, err := writePatch(w, files, format)
	if err != nil {
		return "", nil, nil, err
	}
	return set.Digest(), notes, gate, nil
}

// reviewGate is the project a review matched protection with, and the
// protected paths it found.
type reviewGate struct {
	*project.Project
	paths []string
}

// testHookReviewMeasured and testHookReviewFrozen, set only by this
// package's tests, run in ReviewDiff once the change set is measured,
// before it is frozen, and once it is frozen, before the patch is written.
var testHookReviewMeasured, testHookReviewFrozen func()

// checkReviewed refuses a commit whose frozen change set is not the one the
// caller reviewed (CommitOptions.ExpectDiffDigest). It runs under the
// transaction's lock, on the frozen set: the bytes compared are the bytes
// that would land.
func checkReviewed(id string, set *changeset.Set, o CommitOptions) *Refusal {
	if o.ExpectDiffDigest == "" {
		return nil
	}
	if d := set.Digest(); d != o.ExpectDiffDigest {
		r := refuse(ReviewStale, nil, "the change set changed since it was reviewed (reviewed %s, now %s)", o.ExpectDiffDigest, d)
		r.Remedy = Remedy{Kind: RemedyReviewAgain, Tx: id}
		return r
	}
	return nil
}

// InfoWithDigest is Info with DiffDigest set: for a transaction not yet
// settled, the digest of its change set now (ChangeDigest), which a commit
// can be bound to; for a settled one, its receipt's.
func (t *Tx) InfoWithDigest(ctx context.Context) (*Info, error) {
	in, err := t.Info(ctx)
	if err != nil {
		return nil, err
	}
	if in.Status.Settled() {
		if rc, err := t.Receipt(); err == nil {
			in.DiffDigest = rc.DiffDigest
		}
		return in, nil
	}
	if d, err := t.ChangeDigest(ctx); err == nil {
		in.DiffDigest = d
	}
	return in, nil
}

// Verdict is what a commit of a transaction's change set made now would
// meet, found by Check: what a front end that shows the change set to a
// person decides its actions by, so that it never offers one the commit
// would refuse.
type Verdict struct {
	// Empty says the change set is empty: a commit would land nothing.
	Empty bool
	// Protected are the changed paths protection holds (the
	// transaction's selectors and the project's as the base's config says
	// now, as a commit matches them), sorted, each once: a changed
	// directory is left out when a path beneath it is named.
	Protected []string
	// Plain is the refusal a plain commit would meet; nil: it would land.
	Plain *Refusal
	// Approved is the refusal a commit with the user's approval of the
	// protected paths would meet; nil: it would land. It is Plain when no
	// path is protected: approving changes nothing then.
	Approved *Refusal
}

// CheckReview is Check made for both commits a person can choose between,
// plain and approving the protected paths, with o's Validate and
// ExpectDiffDigest (the digest of the change set shown): a change set
// that moved since it was shown is a ReviewStale refusal of both. o's
// Approve and AgentApproval are ignored. Validation runs at most once, as
// a plain commit is refused protected paths before anything is validated.
//
// Unlike Check, it records no finding (a validator it runs is logged, as
// every one is): it is a page's question, asked at each load, and a
// "checked" event per load would bury the log and change what an agent's
// Stop hook takes for the last finding it told the agent.
func (t *Tx) CheckReview(ctx context.Context, o CommitOptions) (_ *Verdict, err error) {
	defer exported(&err)
	o.Approve, o.AgentApproval = false, false
	v := &Verdict{}
	if v.Plain, v.Empty, err = t.check(ctx, o, false); err != nil {
		return nil, err
	}
	if v.Protected, err = t.protectedNow(ctx); err != nil {
		return nil, err
	}
	v.Approved = v.Plain
	if v.Plain != nil && v.Plain.Kind == ProtectedPathNotApproved {
		// The paths the check froze and refused, not the ones matched
		// again a moment later, are what approving approves.
		v.Protected = v.Plain.Paths
		o.Approve = true
		if v.Approved, _, err = t.check(ctx, o, false); err != nil {
			return nil, err
		}
	}
	v.Protected = leaves(v.Protected)
	return v, nil
}

// leaves is paths less each one another lies beneath: a new protected
// directory is named by the protected files in it, not as well on its own.
func leaves(paths []string) []string {
	var out []string
	for _, p := range paths {
		beneath := func(q string) bool { return strings.HasPrefix(q, p+"/") }
		if !slices.ContainsFunc(paths, beneath) {
			out = append(out, p)
		}
	}
	return out
}

// protectedNow are the paths of the change set as it is now that
// protection holds, matched as a commit matches them.
func (t *Tx) protectedNow(ctx context.Context) ([]string, error) {
	set, err := t.diff(ctx)
	if err != nil {
		return nil, err
	}
	gate, err := t.projectNow(&workspace{base: t.Base()})
	if err != nil {
		return nil, err
	}
	return t.protectedPaths(set, gate)
}
