package pool

import "github.com/airlockdev/airlock/internal/launch"

// Accounting is what airlock knows of a transaction's processes once its
// command has ended: what Put needs to decide whether the tree may be
// pooled, and what the settle names as left running.
type Accounting struct {
	// Contained says every process of the command ended with its PID
	// namespace (launch.Result.Contained): none can write the tree.
	Contained bool
	// Leftovers names the processes the command left running, "PID
	// (comm)", which ended with its namespace.
	Leftovers []string
}

// Account decides from a run's launch result, by construction alone: a
// contained run's processes are all gone. An uncontained run's are not
// known (what it left running may have dropped any mark airlock gave it),
// and its tree is never pooled.
func Account(lr launch.Result) Accounting {
	if lr.Contained {
		return Accounting{Contained: true, Leftovers: lr.Ended}
	}
	return Accounting{}
}
