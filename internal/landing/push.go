package landing

import (
	"context"
	"fmt"
	"strings"
)

// Pushed is what became of an atomic push that did not fail.
type Pushed int

const (
	// PushLanded: git reported both refs updated.
	PushLanded Pushed = iota
	// PushConfirmed: git did not hear the server's report (the
	// connection dropped, or the push timed out), but the remote, asked
	// after, holds both refs at the values pushed: it landed.
	PushConfirmed
	// PushMoved: the push did not land and another pusher moved a ref
	// since the fetch; the landing starts over.
	PushMoved
)

// PushError is a push that did not land, or of which it is unknown
// whether it did. Its message says which, and never advises on
// permissions where the server did not refuse.
type PushError struct {
	Remote, Ref string
	Said        string   // what git said, masked
	Rejected    []string // the server's refusals per ref, as git's porcelain output gives them
	// Denied: git said the server or ssh turned the credentials away.
	Denied bool
	// Advice: what to do about an ssh failure (a host key ssh does not
	// know, no key it can use without asking), or "".
	Advice string
	// TimedOut: the push hit its deadline or a transport's bound.
	TimedOut bool
	// Unknown: the remote could not be asked after the push (AskErr
	// says why), so the push may have landed. Otherwise the remote held
	// the heads the landing fetched when asked: nothing landed.
	Unknown bool
	AskErr  error
}

func (e *PushError) Error() string {
	var b strings.Builder
	what := "failed"
	if e.TimedOut {
		what = "timed out"
	}
	fmt.Fprintf(&b, "the push of %s and %s to %s %s: ", e.Ref, NotesRef, e.Remote, what)
	if len(e.Rejected) > 0 {
		b.WriteString(strings.Join(e.Rejected, "; ") + "; ")
	}
	b.WriteString(e.Said)
	switch {
	case e.Unknown:
		fmt.Fprintf(&b, "; whether it landed is unknown: asking %s for its heads after it failed too (%v)", e.Remote, e.AskErr)
	default:
		fmt.Fprintf(&b, "; %s still holds the heads fetched before the push: nothing landed", e.Remote)
	}
	switch {
	case e.Advice != "":
		fmt.Fprintf(&b, "; %s", e.Advice)
	case len(e.Rejected) > 0 || e.Denied:
		fmt.Fprintf(&b, "; airlock's push is a plain git push: check that `git push %s` is allowed here (credentials, branch protection, the right to push %s)", e.Remote, NotesRef)
	}
	return b.String()
}

// denials are what git, curl and ssh say when the credentials, not the
// network, stopped a push.
var denials = []string{"Authentication failed", "Permission denied", "could not read Username", "could not read Password", "The requested URL returned error: 401", "The requested URL returned error: 403"}

// PushAtomic pushes the landed commit and the notes commit in one atomic
// push whose leases are the heads the landing fetched. Whenever git
// reports a failure, the remote is asked (ls-remote, bounded too) what it
// holds before anything is concluded: both refs at the values pushed is a
// landing whose report was lost (PushConfirmed); either ref elsewhere
// than fetched, another pusher won (PushMoved); both as fetched, the push
// failed (a *PushError, nothing landed). When the remote cannot be asked,
// the *PushError says the outcome is unknown.
func (l *Repo) PushAtomic(ctx context.Context, head, notes, commit, noteCommit string) (Pushed, error) {
	r, rctx, cancel := l.remote(ctx)
	out, err := r.Run(rctx, "push", "--atomic", "--porcelain", "--quiet",
		"--force-with-lease="+l.Ref+":"+head, "--force-with-lease="+NotesRef+":"+notes,
		"--", l.access.name, commit+":"+l.Ref, noteCommit+":"+NotesRef)
	timedOut := err != nil && l.timedOut(rctx, "push", err) != nil
	cancel()
	if err == nil {
		return PushLanded, nil
	}
	nowHead, nowNotes, askErr := l.remoteHeads(ctx)
	switch {
	case askErr == nil && nowHead == commit && nowNotes == noteCommit:
		return PushConfirmed, nil
	case askErr == nil && (nowHead != head || nowNotes != notes):
		return PushMoved, nil
	}
	e := &PushError{Remote: l.Remote, Ref: l.Ref, Said: l.mask(gitSaid(err)), TimedOut: timedOut, Unknown: askErr != nil, AskErr: askErr}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "!") {
			e.Rejected = append(e.Rejected, l.mask(strings.Join(strings.Fields(line)[1:], " ")))
		}
	}
	for _, d := range denials {
		e.Denied = e.Denied || strings.Contains(e.Said, d)
	}
	e.Advice = l.access.sshAdvice(e.Said)
	return 0, e
}

// remoteHeads asks the remote for its branch and notes heads.
func (l *Repo) remoteHeads(ctx context.Context) (string, string, error) {
	r, rctx, cancel := l.remote(ctx)
	defer cancel()
	// The push URL: where the push went (pushRemote names it alone).
	b, err := r.Run(rctx, "ls-remote", "--", pushRemote, l.Ref, NotesRef)
	if err != nil {
		if te := l.timedOut(rctx, "ls-remote", err); te != nil {
			return "", "", te
		}
		return "", "", fmt.Errorf("ls-remote %s: %s", l.Remote, l.mask(gitSaid(err)))
	}
	var head, notes string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		switch f[1] {
		case l.Ref:
			head = f[0]
		case NotesRef:
			notes = f[0]
		}
	}
	return head, notes, nil
}
