package airlock

import (
	"context"
	"sort"
	"time"
)

// Info summarises a transaction for `list` and `show`. Its JSON form is
// part of airlock's interface (docs/json.md). RefusedPaths are
// Bytes, as in the receipt, so that a path that is not valid UTF-8 keeps
// its bytes.
type Info struct {
	ID           string    `json:"id"`
	Status       Status    `json:"status"`
	Base         string    `json:"base"`
	Backend      string    `json:"backend"`
	Path         string    `json:"path"`
	CreatedAt    time.Time `json:"created_at"`
	PID          int       `json:"pid"`
	OwnerAlive   bool      `json:"owner_alive"`
	StagedBytes  int64     `json:"staged_bytes"`
	Added        int       `json:"added"`
	Modified     int       `json:"modified"`
	Deleted      int       `json:"deleted"`
	GitMeta      int       `json:"git_meta"`
	Refusal      string    `json:"refusal,omitempty"`
	RefusedPaths []Bytes   `json:"refused_paths,omitempty"`
	PortBase     int       `json:"port_base"`
	Receipt      string    `json:"receipt,omitempty"`
	// DiffDigest is the change set's digest (set by InfoWithDigest, for
	// `show` and the MCP status tool): what `commit --expect-digest`
	// binds a commit to.
	DiffDigest string `json:"diff_digest,omitempty"`
	// Branch and BranchHead: the git branch of a worktree transaction and
	// the commit it names (now, or when the staged worktree was removed);
	// BranchKept: it outlived the transaction, holding commits no other
	// ref contains.
	Branch     string `json:"branch,omitempty"`
	BranchHead string `json:"branch_head,omitempty"`
	BranchKept bool   `json:"branch_kept,omitempty"`
	// Recycled says how much of a recycled workspace was copied (see
	// Staging); NotRecycled why a pooled tree was there but not reused.
	Recycled    *Recycled `json:"recycled,omitempty"`
	NotRecycled string    `json:"not_recycled,omitempty"`
	// Conflicts: the paths a rebase left conflict markers in that still
	// hold a marker line in the staged workspace; a commit refuses
	// (Conflicted) while there are any.
	Conflicts []Bytes `json:"conflicts,omitempty"`
	// Error says why a transaction listed as corrupt cannot be read.
	Error string `json:"error,omitempty"`
}

// Info reads a transaction's summary. For a transaction that has not
// settled the counts are those of its change set now.
func (t *Tx) Info(ctx context.Context) (_ *Info, err error) {
	defer exported(&err)
	st, err := t.Status()
	if err != nil {
		return nil, err
	}
	in := &Info{
		ID: t.ID(), Status: st, Base: t.Base(), Backend: t.rec.Backend, Path: t.Path(),
		CreatedAt: t.rec.CreatedAt, PID: t.rec.PID, OwnerAlive: alive(t.rec.PID),
		PortBase: t.rec.PortBase,
	}
	if sg := t.rec.Staging; sg != nil {
		in.Recycled, in.NotRecycled = sg.Recycled, sg.NotRecycled
	}
	if !st.Settled() {
		in.StagedBytes = diskUsage(t.Path())
		if cs, err := t.Changes(ctx); err == nil {
			in.Added, in.Modified, in.Deleted = cs.Counts()
			in.GitMeta = cs.GitMeta()
		}
		if c, err := t.Conflicts(); err == nil {
			in.Conflicts = c
		}
	}
	if b, err := t.Branch(ctx); err == nil && b != nil {
		in.Branch, in.BranchHead, in.BranchKept = b.Name, b.Head, b.Kept
	}
	if rc, err := t.Receipt(); err == nil {
		in.Receipt = t.ReceiptPath()
		if st.Settled() {
			in.Added, in.Modified, in.Deleted = rc.Added, rc.Modified, rc.Deleted
		}
		if st == StatusRefused {
			in.Refusal = rc.Refusal
			in.RefusedPaths = rawPaths(rc.RefusedPaths)
		}
	}
	return in, nil
}

// List summarises the store's transactions, oldest first: the unsettled
// ones, and with all also the settled ones.
func (s *Store) List(ctx context.Context, all bool) ([]*Info, error) {
	ids, err := s.IDs()
	if err != nil {
		return nil, err
	}
	var out []*Info
	for _, id := range ids {
		// One transaction whose state cannot be trusted does not hide the
		// others: it is listed as corrupt, with the reason.
		tx, err := s.Tx(id)
		var in *Info
		if err == nil {
			in, err = tx.Info(ctx)
		}
		if err != nil {
			out = append(out, &Info{ID: id, Status: StatusCorrupt, Error: err.Error()})
			continue
		}
		if !all && in.Status.Settled() {
			continue
		}
		out = append(out, in)
	}
	// Oldest first, whatever the ids: a chosen --id sorts anywhere.
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Event is one line of a transaction's event log.
type Event struct {
	Time   time.Time      `json:"time"`
	Event  string         `json:"event"` // opened, checked, applying, committed, refused, ...
	Detail map[string]any `json:"detail,omitempty"`
}
