package airlock

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/landing"
	"github.com/airlockdev/airlock/internal/project"
	"github.com/airlockdev/airlock/internal/receipt"
)

// A batch lands several transactions into one remote branch as a merge
// queue does (bors): one fetch of the head H; the candidates built in
// order, each on the tree of the one before (the first on H), each
// refused as a landing alone would be (a protected path, BaseDrift, a
// MergeConflict with the branch or with an earlier transaction of the
// batch); the validators run once, on the last candidate's tree; then
// one commit per transaction, each the parent of the next, each with its
// own receipt, all the receipts in one notes commit, and one atomic push
// of both refs expecting H and the notes head fetched.
//
// When the validators fail on the batch, bisection finds the first
// transaction whose candidate fails, validating prefixes of the batch
// (the tree after the first k transactions is candidate k, already
// built): it assumes, as bors does, that a prefix fails once it holds the
// transaction that breaks it. The prefix before that transaction passed
// on its own tip tree and lands: the tree at the top of what is pushed is
// exactly the tree the validators passed, and every commit below it is a
// prefix of it. That transaction is refused ValidationFailed, by the
// refusal of its own prefix's validation, and is kept. The transactions
// after it are built again on what landed, without it, and validated in
// the next round: they land only on a tree that passed. One culprit in n
// transactions costs 1 + ceil(log2 n) validations in its round and one
// more for the rest. When the first transaction alone fails, the head's
// own tree is validated once more: a head that fails refuses every
// transaction of the batch in that round (1 + ceil(log2 n) + 1 runs, not
// one round per transaction).
//
// A refusal found while building depends on the transactions built
// before it; it stands only when none of them left the round (the
// culprit, and everything after it, try again in the next round). A push
// that finds the remote moved starts the round over after a backoff,
// every transaction of it counting one lost race toward o.Attempts.
type batch struct {
	o        RemoteOptions
	ref      string
	attempts int
	l        *landing.Repo
	out      []RemoteLanded
	done     []bool
}

// batchMember is one transaction of a batch.
type batchMember struct {
	i     int // its place in the ids given
	t     *Tx
	rl    *remoteLanding
	moved int // rounds whose push found the remote moved
	// In the current round: the gate and validators it landed under, and
	// its candidate; or the refusal building it found.
	gate    *project.Project
	cmds    []string
	sub     string
	cand    *candidate
	refusal *Refusal
}

// landBatch lands ids as a batch; it returns false, having done nothing,
// when they cannot be one (an id given twice, a bad branch or attempts:
// the serial landing says what is wrong with each).
func (s *Store) landBatch(ctx context.Context, ids []string, o RemoteOptions) ([]RemoteLanded, bool) {
	ref, attempts, err := remoteTarget(ctx, o)
	if err != nil || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
		return nil, false
	}
	b := &batch{o: o, ref: ref, attempts: attempts, out: make([]RemoteLanded, len(ids)), done: make([]bool, len(ids))}
	txs := make([]*Tx, len(ids))
	for i, id := range ids {
		if txs[i], err = s.Tx(id); err != nil {
			b.out[i], b.done[i] = RemoteLanded{ID: id, Err: err}, true
		}
	}
	// Locked in the order of their ids, not as given: two lands naming
	// the same transactions in other orders wait for each other instead
	// of each holding what the other waits for.
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, c int) int { return cmp.Compare(ids[a], ids[c]) })
	for _, i := range order {
		if txs[i] == nil {
			continue
		}
		unlock, err := txs[i].settleLock(ctx)
		if err != nil {
			b.end(i, txs[i], nil, err)
			txs[i] = nil
			continue
		}
		defer unlock()
	}
	var members []*batchMember
	for i, t := range txs {
		if t == nil {
			continue
		}
		rl, l, err := t.prepareRemote(ctx, o, ref)
		if rl == nil {
			b.end(i, t, l, err)
			continue
		}
		members = append(members, &batchMember{i: i, t: t, rl: rl})
	}
	if len(members) == 0 {
		return b.out, true
	}
	for _, m := range members[1:] {
		if !m.rl.l.SameRemote(members[0].rl.l) {
			// Their bases name the remote differently: no one push can
			// take them all. Each lands alone, as without a batch.
			b.serial(ctx, members)
			return b.out, true
		}
	}
	scratch, err := os.MkdirTemp("", "airlock-land-batch-")
	if err != nil {
		b.failAll(members, fmt.Errorf("make the batch's scratch repository: %w", err))
		return b.out, true
	}
	defer os.RemoveAll(scratch)
	first := members[0].t
	b.l, err = landing.Open(ctx, filepath.Join(scratch, "repo.git"), first.Base(), first.Base(), o.Remote, ref)
	if err == nil {
		// The batch's own repository makes its fetch and push: bounded
		// as each member's landing alone is.
		b.l.Bounds = o.Limits.bounds()
	}
	for _, m := range members[1:] {
		if err == nil {
			err = b.l.ShareObjects(ctx, m.t.Base())
		}
	}
	if err != nil {
		b.failAll(members, err)
		return b.out, true
	}
	queue, lost := members, false
	for len(queue) > 0 {
		var next []*batchMember
		for _, m := range queue {
			if m.moved >= attempts {
				b.settle(ctx, m, remoteMoved(b.l, attempts))
			} else {
				next = append(next, m)
			}
		}
		if queue = next; len(queue) == 0 {
			break
		}
		if lost {
			txs := make([]*Tx, len(queue))
			for i, m := range queue {
				txs[i] = m.t
			}
			if err := remoteBackoff(ctx, queue[0].moved, o.Jitter, txs...); err != nil {
				b.failAll(queue, err)
				break
			}
		}
		queue, lost = b.round(ctx, queue)
	}
	return b.out, true
}

// end records the outcome of the transaction at i.
func (b *batch) end(i int, t *Tx, l *RemoteLanded, err error) {
	b.out[i], b.done[i] = t.remoteLanded(l, err, b.o), true
}

// settle ends m refused by r, kept.
func (b *batch) settle(ctx context.Context, m *batchMember, r *Refusal) {
	l, err := m.rl.settle(ctx, m.t, Refused, r)
	b.end(m.i, m.t, l, err)
}

// failAll ends every member not yet ended with err.
func (b *batch) failAll(ms []*batchMember, err error) {
	for _, m := range ms {
		if !b.done[m.i] {
			b.end(m.i, m.t, m.rl.out, err)
		}
	}
}

// pending are the members of ms not yet ended.
func (b *batch) pending(ms []*batchMember) []*batchMember {
	var out []*batchMember
	for _, m := range ms {
		if !b.done[m.i] {
			out = append(out, m)
		}
	}
	return out
}

// serial lands each member alone, in order, as LandRemote does for one;
// a signal that stops one stops the rest.
func (b *batch) serial(ctx context.Context, ms []*batchMember) {
	for _, m := range ms {
		l, err := m.t.landRemoteLoop(ctx, m.rl, b.o, b.attempts)
		b.end(m.i, m.t, l, err)
		if ctx.Err() != nil || interruptedBy(b.out[m.i].Err) != 0 {
			b.failAll(ms, err)
			return
		}
	}
}

// round is one fetch, build, validation (and bisection) and push of the
// queue. It returns the members still to land, and whether the push lost
// a race.
func (b *batch) round(ctx context.Context, queue []*batchMember) ([]*batchMember, bool) {
	for _, m := range queue {
		m.rl.out.Attempts++
		m.cand, m.refusal = nil, nil
		// What ran in an earlier round is not this round's verdict: a
		// transaction refused building now ran no validator now.
		m.rl.sc.validated, m.rl.sc.batchTree = nil, ""
	}
	head, notes, err := b.l.FetchHeads(ctx)
	if r := timeoutRefusal(err); r != nil {
		for _, m := range b.pending(queue) {
			b.settle(ctx, m, r)
		}
		return nil, false
	}
	if err != nil {
		b.failAll(queue, err)
		return nil, false
	}
	built, considered := b.build(ctx, queue, head, notes)
	accepted, culprit, why, err := b.validate(ctx, built)
	if err != nil {
		b.failAll(queue, err)
		return nil, false
	}
	if culprit != nil && culprit == built[0] {
		// The first transaction alone fails: the head may be what
		// fails. Then no transaction is the culprit, and bisecting the
		// rest one round each would spend a validation per transaction
		// to refuse them all.
		broken, err := b.headFails(ctx, culprit, head)
		if err != nil {
			b.failAll(queue, err)
			return nil, false
		}
		if broken != nil {
			// A transaction refused building before the first one built
			// was refused against the head alone: that refusal stands.
			first := slices.Index(queue, culprit)
			for k, m := range queue {
				switch {
				case b.done[m.i]:
				case k < first && m.refusal != nil:
					b.settle(ctx, m, m.refusal)
				default:
					m.rl.sc.validated = culprit.rl.sc.validated
					b.settle(ctx, m, broken)
				}
			}
			return nil, false
		}
	}
	if len(accepted) > 0 {
		moved, err := b.push(ctx, head, notes, accepted)
		if err != nil {
			// A push that timed out with nothing landed refuses
			// RemoteTimeout, each kept; one whose outcome is unknown
			// says how to find out (pushFailed).
			for _, m := range b.pending(queue) {
				if r, err := m.t.pushFailed(err); r != nil {
					b.settle(ctx, m, r)
				} else {
					b.end(m.i, m.t, m.rl.out, err)
				}
			}
			return nil, false
		}
		if moved {
			for _, m := range b.pending(queue) {
				m.moved++
				m.t.event("remote_moved", map[string]any{"attempt": m.rl.out.Attempts, "branch": b.l.Ref, "batch": len(accepted)})
			}
			return b.pending(queue), true
		}
	}
	// What landed (or nothing, when the first failed) stands: the culprit
	// is refused, and so is each transaction refused building before it,
	// against a tree that holds only what landed.
	stop := considered
	if culprit != nil {
		stop = slices.Index(queue, culprit)
		b.settle(ctx, culprit, why)
	}
	for _, m := range queue[:stop] {
		if m.refusal != nil && !b.done[m.i] {
			b.settle(ctx, m, m.refusal)
		}
	}
	return b.pending(queue), false
}

// build makes the candidates of the queue on head, each on the tree of
// the one before. It returns those built, and how many of the queue it
// considered: a transaction whose validators (or the place they run)
// differ from the first's waits for the next round with all after it,
// since a batch is validated once. A transaction landed before is
// recorded so; one refused here keeps its refusal in m.refusal.
func (b *batch) build(ctx context.Context, queue []*batchMember, head, notes string) ([]*batchMember, int) {
	var built []*batchMember
	on := head
	for k, m := range queue {
		t, rl := m.t, m.rl
		commit, err := b.l.FindLanded(ctx, head, rl.snap.Head, t.ID())
		if err != nil {
			b.end(m.i, t, rl.out, err)
			continue
		}
		if commit != "" {
			res, err := t.recordFound(ctx, b.l, commit, notes, rl.set)
			if err == nil {
				rl.out.Commit, rl.out.Already, rl.out.Result = commit, true, res
			}
			b.end(m.i, t, rl.out, err)
			continue
		}
		gate, err := t.remoteGate(ctx, b.l, on, &rl.snap)
		if err != nil {
			b.end(m.i, t, rl.out, err)
			continue
		}
		rl.sc.approved = approval(rl.o, gate)
		if m.refusal, err = t.checkProtected(rl.set, rl.o, gate); err != nil || m.refusal != nil {
			if err != nil {
				b.end(m.i, t, rl.out, err)
			}
			continue
		}
		cmds, sub := t.validators(rl.o, gate), projectPrefix(rl.snap.Prefix, gate.Under)
		if len(built) > 0 && (!slices.Equal(cmds, built[0].cmds) || sub != built[0].sub) {
			return built, k
		}
		cand, r, err := t.buildCandidate(ctx, b.l, rl.w, rl.set, on, &rl.snap)
		switch {
		case err != nil:
			b.end(m.i, t, rl.out, err)
		case r != nil:
			m.refusal = r
		default:
			m.gate, m.cmds, m.sub, m.cand = gate, cmds, sub, cand
			built = append(built, m)
			on = cand.tree
		}
	}
	return built, len(queue)
}

// validate runs the validators once on the last candidate of built;
// when they fail, it bisects for the first candidate that fails. It
// returns the prefix of built that passed on its own tip tree, the
// transaction that first fails (nil when none did) and its refusal.
func (b *batch) validate(ctx context.Context, built []*batchMember) ([]*batchMember, *batchMember, *Refusal, error) {
	if len(built) == 0 || len(built[0].cmds) == 0 {
		return built, nil, nil, nil
	}
	// Invariant: the candidate of built[lo-1] passed (lo 0: H, which is
	// not validated here: it is what the branch holds), that of
	// built[hi-1] failed with why.
	lo, hi := 0, len(built)
	why, err := b.validateAt(ctx, built[hi-1])
	if err != nil || why == nil {
		return built, nil, nil, err
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		r, err := b.validateAt(ctx, built[mid-1])
		if err != nil {
			return nil, nil, nil, err
		}
		if r == nil {
			lo = mid
		} else {
			hi, why = mid, r
		}
	}
	return built[:lo], built[hi-1], why, nil
}

// headFails validates head's own tree (checked out of m's index, which
// m, refused either way, no longer needs) with m's validators; it returns
// the refusal of every transaction of the batch when the head fails
// them, nil when it passes.
func (b *batch) headFails(ctx context.Context, m *batchMember, head string) (*Refusal, error) {
	ir := b.l.Git.WithIndex(m.t.st.Path(remoteIndexFile))
	if _, err := ir.Run(ctx, "read-tree", head); err != nil {
		return nil, fmt.Errorf("read %s into the landing's index: %w", head, err)
	}
	r, ran, err := m.t.validateTree(ctx, b.l, m.cmds, m.gate, &m.rl.snap)
	if err != nil || r == nil {
		return nil, err
	}
	m.rl.sc.validated = ran
	return refuse(ValidationFailed, nil, "%s of %s already fails its validators at %.12s, without any transaction of the batch (%s): no transaction is the culprit; make the branch pass, then land again", b.l.Ref, b.l.Remote, head, r.Reason), nil
}

// validateAt runs the validators on m's candidate, the tree of the batch
// up to m, checked out of m's index; the validators that ran are m's.
func (b *batch) validateAt(ctx context.Context, m *batchMember) (*Refusal, error) {
	r, ran, err := m.t.validateTree(ctx, b.l, m.cmds, m.gate, &m.rl.snap)
	m.rl.sc.validated = ran
	return r, err
}

// push commits the accepted candidates, each on the one before (the
// first on head), seals their receipts into one notes commit and pushes
// both in one atomic push; it records each landed transaction. It
// reports moved when the remote moved under the push.
func (b *batch) push(ctx context.Context, head, notes string, accepted []*batchMember) (bool, error) {
	prev, err := chainPrevious(ctx, b.l, head, notes)
	if err != nil {
		return false, err
	}
	tip := accepted[len(accepted)-1]
	parent := head
	commits := make([]string, len(accepted))
	data := make([][]byte, len(accepted))
	rcs := make([]*receipt.Receipt, len(accepted))
	for i, m := range accepted {
		m.rl.sc.validated, m.rl.sc.batchTree = nil, ""
		if len(m.cmds) > 0 {
			// The validators passed on the tip, so all of them ran.
			m.rl.sc.validated = m.cmds
			if len(accepted) > 1 {
				m.rl.sc.batchTree = tip.cand.tree
			}
		}
		if commits[i], err = m.t.commitCandidate(ctx, b.l, m.cand.tree, parent, m.rl.set); err != nil {
			return false, err
		}
		if rcs[i], data[i], err = m.t.sealLanded(ctx, b.l, commits[i], prev, m.cand, m.rl.set, m.rl.sc); err != nil {
			return false, err
		}
		prev, parent = rcs[i].Digest, commits[i]
	}
	noteCommit, err := b.l.AddNotes(ctx, notes, commits, data)
	if err != nil {
		return false, err
	}
	fault.Point("land-remote:built")
	pushed, err := b.l.PushAtomic(ctx, head, notes, parent, noteCommit)
	if err != nil || pushed == landing.PushMoved {
		return pushed == landing.PushMoved, err
	}
	fault.Point("land-remote:pushed")
	for i, m := range accepted {
		m.rl.out.Commit = commits[i]
		res, err := m.t.recordLanded(ctx, b.l, rcs[i], data[i], m.rl.set, m.rl.sc)
		warnConfirmed(res, b.l, pushed)
		m.t.warnIgnored(res, b.l, m.cand)
		m.rl.out.Result = res
		b.end(m.i, m.t, m.rl.out, err)
	}
	return false, nil
}
