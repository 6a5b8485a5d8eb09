package airlock

import "context"

// Landed is the outcome of one transaction in a Land.
type Landed struct {
	ID     string
	Result *Result // nil when the transaction could not be loaded or settled
	Err    error   // a *Refusal when it was refused
}

// Land integrates transactions into their base one after another, in the
// order given: each is committed against the base as the ones before it
// left it (three-way merged where they touched the same files) and, with
// o.Validate, validated on its exact candidate. A refused transaction is
// kept and the rest go on: a local merge queue whose tested tree is the
// tree that lands. SIGINT or SIGTERM while one validates stops there: that
// one is kept as it was (an *InterruptedError), the rest are not tried.
func (s *Store) Land(ctx context.Context, ids []string, o CommitOptions) []Landed {
	out := make([]Landed, 0, len(ids))
	for _, id := range ids {
		l := Landed{ID: id}
		tx, err := s.Tx(id)
		if err != nil {
			l.Err = err
			out = append(out, l)
			continue
		}
		l.Result, l.Err = tx.Commit(ctx, o)
		out = append(out, l)
		if ctx.Err() != nil || interruptedBy(l.Err) != 0 {
			// A signal to airlock stops the queue, not one commit of it.
			break
		}
	}
	return out
}
