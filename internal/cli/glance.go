package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// writeGlance prints a settle for a person at a terminal, in at most three
// lines: what happened, the counts, and the next step when there is one.
// The airlock.* block says the same for a program (writeBlock); cause,
// when not "", is why a run discarded ("the command exited 2").
func writeGlance(w io.Writer, res *airlock.Result, cause string) {
	var b strings.Builder
	fmt.Fprintf(&b, "airlock: %s\n", happened(res, cause))
	if c := counts(res); c != "" {
		fmt.Fprintf(&b, "airlock: %s\n", c)
	}
	if n := nextStep(res); n != "" {
		fmt.Fprintf(&b, "airlock: next: %s\n", n)
	}
	io.WriteString(w, b.String())
	writeWarnings(w, res)
}

// happened is the glance's first line: the outcome, and for a refusal its
// kind in words, its reason and the paths it names.
func happened(res *airlock.Result, cause string) string {
	var s string
	switch res.Outcome {
	case airlock.Committed:
		s = "committed " + res.TxID
		if res.PartOf != "" && res.Receipt != nil {
			s += " (" + commandline.QuotePaths(res.Receipt.Paths, 3) + "); " + res.PartOf + " stays open with the rest"
		}
	case airlock.NoChanges:
		s = "no changes in " + res.TxID + "; the base is untouched"
	case airlock.Discarded:
		s = "discarded " + res.TxID + "; the base is untouched"
	case airlock.Refused:
		s = "refused " + res.TxID
		if r := refusalOf(res); r != nil {
			s += " (" + refusalWords(r.Kind) + ")"
			if r.Reason != "" {
				s += ": " + r.Reason
			}
			if len(r.Paths) > 0 {
				s += ": " + commandline.QuotePaths(r.Paths, 3)
			}
		}
	default:
		s = string(res.Outcome) + " " + res.TxID
	}
	if res.Repeat {
		// The transaction had settled before: this call changed nothing.
		s = "already " + s
	}
	if cause != "" {
		s = cause + ": " + s
	}
	return s
}

// refusalOf is res's refusal: the one this settle met, or the one a
// repeated call reports from the receipt.
func refusalOf(res *airlock.Result) *airlock.Refusal {
	if res.Refusal != nil {
		return res.Refusal
	}
	if rc := res.Receipt; rc != nil && rc.Refusal != "" {
		r := &airlock.Refusal{Kind: airlock.RefusalKind(rc.Refusal)}
		for _, p := range rc.RefusedPaths {
			r.Paths = append(r.Paths, string(p))
		}
		return r
	}
	return nil
}

// counts is the glance's second line, "+3 ~1 -0" and what became of them;
// "" when there is nothing to count.
func counts(res *airlock.Result) string {
	if res.Outcome == airlock.NoChanges {
		return ""
	}
	s := fmt.Sprintf("+%d ~%d -%d", res.Added, res.Modified, res.Deleted)
	switch res.Outcome {
	case airlock.Committed:
		if n := len(res.Merged); n > 0 {
			s += fmt.Sprintf(", %d merged with the base's own changes", n)
		}
	case airlock.Refused:
		s += " kept in the transaction, not applied"
	case airlock.Discarded:
		s += " dropped"
	}
	return s
}

// nextStep is the command a person types next, from the refusal's remedy
// where it has one; "" when the settle leaves nothing to do.
func nextStep(res *airlock.Result) string {
	if res.Outcome != airlock.Refused {
		return ""
	}
	id := res.TxID
	var r *airlock.Refusal
	if r = refusalOf(res); r == nil {
		return "airlock diff " + id
	}
	m := r.Remedy
	switch m.Kind {
	case airlock.RemedyApprove, airlock.RemedyUserApprove:
		return fmt.Sprintf("airlock diff %s, then airlock commit %s --approve%s", m.Tx, m.Tx, commandline.PathArgs(m.Paths))
	case airlock.RemedyReviewAgain:
		return fmt.Sprintf("airlock diff %s, then airlock commit %s --expect-digest DIGEST (airlock show %s prints it)", id, m.Tx, m.Tx)
	case airlock.RemedyRecover:
		return "airlock recover --workdir " + m.Base
	case airlock.RemedyRebase:
		return fmt.Sprintf("airlock rebase %s, then resolve what it marks", m.Tx)
	case airlock.RemedyResolve:
		return fmt.Sprintf("resolve the markers in %s, then airlock commit %s", m.Dir, m.Tx)
	}
	if s := commandline.Remedy(m); s != "" {
		// A remedy this glance has no shorter words for.
		return s
	}
	switch r.Kind {
	case airlock.StagedChanged, airlock.ApplyFailed, airlock.InterruptedApply:
		// Nothing to change: the same commit, once the writer stopped or
		// the base was recovered, lands.
		return "airlock commit " + id
	}
	return "airlock diff " + id
}

// refusalWords is a refusal kind as a person reads it; the kind itself
// stays in the block, the receipt and --json.
func refusalWords(k airlock.RefusalKind) string {
	switch k {
	case airlock.BaseDrift:
		return "the base changed"
	case airlock.MergeConflict:
		return "a merge conflict"
	case airlock.ProtectedPathNotApproved:
		return "protected paths, not approved"
	case airlock.BoundaryEscape:
		return "a path outside the base"
	case airlock.SharedInode:
		return "a staged file shares its base file's inode"
	case airlock.UnsupportedEntry:
		return "a FIFO, socket or device node"
	case airlock.ValidationFailed:
		return "validation failed"
	case airlock.ApplyFailed:
		return "the apply failed"
	case airlock.InterruptedApply:
		return "an interrupted apply"
	case airlock.StagedChanged:
		return "the staged files are still changing"
	case airlock.ReviewStale:
		return "changed since it was reviewed"
	case airlock.Conflicted:
		return "conflict markers remain"
	case airlock.RemoteMoved:
		return "the remote branch kept moving"
	case airlock.RemoteTimeout:
		return "the remote did not answer"
	}
	return string(k)
}
