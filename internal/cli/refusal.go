package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/airlockdev/airlock"
)

// The command line's words for what the core returns as data: a refusal's
// remedy as the flags and commands a person types.

// remedy is m in the command line's terms, or "" when there is none.
func remedy(m airlock.Remedy) string {
	switch m.Kind {
	case airlock.RemedyApprove:
		return fmt.Sprintf("review them (airlock diff %s) and commit with --approve", m.Tx)
	case airlock.RemedyUserApprove:
		return fmt.Sprintf("only a person approves them: review them with `airlock review %s` (or `airlock diff %s`) and commit with `airlock commit %s --approve`", m.Tx, m.Tx, m.Tx)
	case airlock.RemedyReviewAgain:
		return fmt.Sprintf("review it again (airlock diff %s; airlock show %s --json gives its diff_digest) and commit with --expect-digest set to the digest you reviewed", m.Tx, m.Tx)
	case airlock.RemedyRecover:
		return fmt.Sprintf("run `airlock recover --workdir %s` first", m.Base)
	}
	return ""
}

// explain is r's reason with its remedy in the command line's terms.
func explain(r *airlock.Refusal) string {
	rem := remedy(r.Remedy)
	switch {
	case rem == "":
		return r.Reason
	case r.Reason == "":
		return rem
	}
	return r.Reason + "; " + rem
}

// refusalLine is the refusal as the command line says it.
func refusalLine(r *airlock.Refusal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused (%s)", r.Kind)
	if s := explain(r); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	if len(r.Paths) > 0 {
		b.WriteString(": ")
		b.WriteString(quotePaths(r.Paths, 10))
	}
	return b.String()
}

func quotePaths(paths []string, most int) string {
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

// message is err as the command line says it: the library's text, with
// what the core gives as data (a refusal) in the command line's words,
// wherever in the chain of wrapping it is.
func message(err error) string {
	s := err.Error()
	var r *airlock.Refusal
	if errors.As(err, &r) {
		s = strings.Replace(s, r.Error(), refusalLine(r), 1)
	}
	return s
}

// withReasons gives each refused event the reason `show` has always
// printed: its cause with its remedy in the command line's terms. The log
// records the cause and the remedy as data; an event recorded with a
// reason of its own keeps it.
func withReasons(evs []airlock.Event) []airlock.Event {
	for i, e := range evs {
		r := e.Refusal()
		if r == nil {
			continue
		}
		if _, ok := e.Detail["reason"]; ok {
			continue
		}
		if _, ok := e.Detail["cause"]; !ok {
			continue
		}
		d := make(map[string]any, len(e.Detail)+1)
		for k, v := range e.Detail {
			d[k] = v
		}
		d["reason"] = explain(r)
		evs[i].Detail = d
	}
	return evs
}
