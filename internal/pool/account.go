package pool

import (
	"fmt"

	"github.com/airlockdev/airlock/internal/holders"
	"github.com/airlockdev/airlock/internal/launch"
)

// Accounting is what airlock knows of a transaction's processes once its
// command has ended: what Put needs to decide whether the tree may be
// pooled, and what the settle names as left running.
type Accounting struct {
	// Contained says every process of the command ended with its PID
	// namespace (launch.Result.Contained): none can write the tree.
	Contained bool
	// Scanned says the command ran uncontained, ended well, and a look
	// through /proc found nothing it left running (holders.Marked); a
	// refresh of its tree still looks for holders first.
	Scanned bool
	// Leftovers names the processes the command left running, "PID
	// (comm)": ended with the namespace where it was contained, still
	// running where it was not.
	Leftovers []string
}

// Account decides from a run's launch result, by construction first: a
// contained run's processes are all gone. Uncontained, processes the
// command left running (a dev server) may write into its tree at any time,
// and such a tree is never pooled; only a tree that could be pooled
// (poolable: a copy-backend one, where Supported) is worth the look
// through /proc for processes whose environment carries marker.
func Account(lr launch.Result, runErr error, marker string, poolable bool) Accounting {
	switch {
	case lr.Contained:
		return Accounting{Contained: true, Leftovers: lr.Ended}
	case poolable && Supported():
		var a Accounting
		for _, h := range holders.Marked(marker) {
			a.Leftovers = append(a.Leftovers, fmt.Sprintf("%d (%s)", h.PID, h.Command))
		}
		a.Scanned = runErr == nil && len(a.Leftovers) == 0
		return a
	}
	return Accounting{}
}
