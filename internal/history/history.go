package history

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/airlockdev/airlock/internal/journal"
	"github.com/airlockdev/airlock/internal/receipt"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/state"
)

// Chain is what was committed to a base, newest first.
type Chain struct {
	Entries []*receipt.Receipt
	// Broken, when set, says where the chain of receipts could not be
	// followed or verified: the entries stop there.
	Broken string
}

// Add files a committed receipt under the base's chain (the copy of
// every receipt committed to the base, named by its digest, that Walk
// walks).
func Add(b *state.Base, rc *receipt.Receipt, data []byte) error {
	return b.WriteReceipt(rc.Digest, data)
}

// Walk follows the base's receipt chain from its newest commit back,
// verifying each receipt and each link. A receipt that cannot be read
// safely is an error: a chain that cannot be trusted is never shown as a
// shorter one.
func Walk(b *state.Base) (*Chain, error) {
	head, err := b.Head()
	if err != nil {
		return nil, err
	}
	out := &Chain{}
	seen := map[string]bool{}
	for d := head; d != ""; {
		if seen[d] {
			out.Broken = fmt.Sprintf("the chain loops at %s", d)
			break
		}
		seen[d] = true
		p := b.ReceiptPath(d)
		data, err := b.ReadReceipt(d)
		var unsafe *state.UnsafeError
		if errors.As(err, &unsafe) {
			// Never read, and never passed over: a chain that cannot be
			// trusted is not shown as a shorter one.
			return nil, err
		}
		if err != nil {
			out.Broken = fmt.Sprintf("receipt %s is missing (%v)", d, unwrapPathErr(err))
			break
		}
		rc, err := receipt.Verify(data)
		if err != nil {
			out.Broken = fmt.Sprintf("receipt %s does not verify: %v", p, err)
			break
		}
		if rc.Digest != d {
			out.Broken = fmt.Sprintf("receipt %s has digest %s, but the chain names %s", p, rc.Digest, d)
			break
		}
		out.Entries = append(out.Entries, rc)
		d = rc.Previous
	}
	return out, nil
}

// unwrapPathErr is the cause of a path error, whose path the message
// names already.
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Reverse turns every path the applied journal j changed, in the staged
// tree dir, back to its state before the apply. It first checks that each
// path still holds exactly what the apply left; those that do not are
// returned and nothing is changed.
func Reverse(dir string, j *journal.Journal, open func(string) (*os.File, error)) ([]string, error) {
	root, err := safefs.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var changed []string
	for _, op := range j.Ops {
		if err := journal.Matches(root, op.Path, op.After); err != nil {
			changed = append(changed, op.Path)
		}
	}
	if len(changed) > 0 {
		return changed, nil
	}
	ops := make([]journal.Op, len(j.Ops))
	for i, op := range j.Ops {
		ops[i] = journal.Op{Path: op.Path, Before: op.After, After: op.Before}
	}
	sort.Slice(ops, func(a, b int) bool { return ops[a].Path < ops[b].Path })
	return nil, journal.ApplyFrom(root, j.TxID, ops, open)
}
