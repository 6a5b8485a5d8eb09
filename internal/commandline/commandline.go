package commandline

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/airlockdev/airlock"
)

// Remedy is m in the command line's terms, or "" when there is none.
func Remedy(m airlock.Remedy) string {
	// A partial commit's: the commit to make again is of its paths.
	part := PathArgs(m.Paths)
	switch m.Kind {
	case airlock.RemedyApprove:
		if part != "" {
			return fmt.Sprintf("review them (airlock diff %s) and commit with `airlock commit %s --approve%s`", m.Tx, m.Tx, part)
		}
		return fmt.Sprintf("review them (airlock diff %s) and commit with --approve", m.Tx)
	case airlock.RemedyUserApprove:
		return fmt.Sprintf("only a person approves them: review them with `airlock review %s` (or `airlock diff %s`) and commit with `airlock commit %s --approve%s`", m.Tx, m.Tx, m.Tx, part)
	case airlock.RemedyReviewAgain:
		return fmt.Sprintf("review it again (airlock diff %s; airlock show %s --json gives its diff_digest) and commit with --expect-digest set to the digest you reviewed", m.Tx, m.Tx)
	case airlock.RemedyRecover:
		return fmt.Sprintf("run `airlock recover --workdir %s` first", m.Base)
	case airlock.RemedyRebase:
		return fmt.Sprintf("run `airlock rebase %s`: it takes the base's changes in and marks the overlapping edits (<<<<<<< ||||||| ======= >>>>>>>) in the staged files, to resolve before `airlock commit %s`", m.Tx, m.Tx)
	case airlock.RemedyResolve:
		return fmt.Sprintf("edit the conflict markers out of them in %s (keep what should land), then run `airlock commit %s` again", m.Dir, m.Tx)
	}
	return ""
}

// Explain is r's reason with its remedy in the command line's terms.
func Explain(r *airlock.Refusal) string {
	rem := Remedy(r.Remedy)
	switch {
	case rem == "":
		return r.Reason
	case r.Reason == "":
		return rem
	}
	return r.Reason + "; " + rem
}

// Refusal is the refusal as the command line says it.
func Refusal(r *airlock.Refusal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused (%s)", r.Kind)
	if s := Explain(r); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	if len(r.Paths) > 0 {
		b.WriteString(": ")
		b.WriteString(QuotePaths(r.Paths, 10))
	}
	return b.String()
}

// QuotePaths quotes paths for one line of text: the first most of them,
// then how many more.
func QuotePaths(paths []string, most int) string {
	var q []string
	for i, p := range paths {
		if i == most {
			q = append(q, fmt.Sprintf("and %d more", len(paths)-most))
			break
		}
		q = append(q, fmt.Sprintf("%q", p))
	}
	return strings.Join(q, ", ")
}

// Step is s in the command line's terms: the command a person types.
func Step(s airlock.Step) string {
	switch s.Kind {
	case airlock.StepRecover:
		return fmt.Sprintf("run `airlock recover --workdir %s`", s.Base)
	case airlock.StepRecoverMoved:
		base := s.Base
		if base == "" {
			base = "NEWPATH"
		}
		return fmt.Sprintf("run `airlock recover --workdir %s --moved`", base)
	case airlock.StepRecoverBaseGone:
		return fmt.Sprintf("run `airlock recover --workdir %s --base-gone`", s.Base)
	case airlock.StepMoved:
		return "--moved"
	case airlock.StepCommit:
		return fmt.Sprintf("`airlock commit %s`", s.Tx)
	case airlock.StepRemoteLog:
		return fmt.Sprintf("`airlock log --remote %s --branch %s`", s.Remote, s.Branch)
	}
	return s.String()
}

// Message is err as the command line says it: the library's text, with
// what the core gives as data (a refusal, the steps that resolve an error)
// in the command line's words, wherever in the chain of wrapping it is.
func Message(err error) string {
	s := err.Error()
	var r *airlock.Refusal
	if errors.As(err, &r) {
		s = strings.Replace(s, r.Error(), Refusal(r), 1)
	}
	var steps []airlock.Step
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch e := e.(type) {
		case *airlock.StepError:
			steps = append(steps, e.Steps...)
		case *airlock.CancelledError:
			steps = append(steps, airlock.Step{Kind: airlock.StepCommit, Tx: e.TxID})
		}
	}
	// The longest first: a step's words may hold a shorter one's
	// (RecoverOptions.Moved).
	slices.SortStableFunc(steps, func(a, b airlock.Step) int { return len(b.String()) - len(a.String()) })
	for _, st := range steps {
		s = strings.ReplaceAll(s, st.String(), Step(st))
	}
	return s
}

// ShellQuote quotes w for a POSIX shell where it holds anything but
// letters, digits and the few marks no shell treats specially.
func ShellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// PathArgs is " -- PATH..." for a partial commit's paths, each quoted for
// a shell, or "" for none.
func PathArgs(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = ShellQuote(p)
	}
	return " -- " + strings.Join(q, " ")
}
