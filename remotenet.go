package airlock

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/landing"
)

// RemoteLimits bound every git call a landing into a remote, RemoteLog
// and the receipts' check make against the remote (fetch, push,
// ls-remote), so that a remote that accepts the connection and never
// answers cannot hang them. A zero field takes its default
// (DefaultRemoteLimits). Each call runs in a session and process group
// of its own, without a terminal, that ends with it and with the process
// that started it, git's ssh and remote helpers with it.
type RemoteLimits struct {
	// Connect bounds an ssh connection and its handshake (ssh's
	// ConnectTimeout); Timeout bounds git:// and http(s), whose connect
	// git does not bound. Not applied where the user chose the ssh
	// command (GIT_SSH_COMMAND, GIT_SSH, core.sshCommand).
	Connect time.Duration
	// LowSpeedLimit (bytes a second) and LowSpeedTime: an http(s)
	// transfer slower than that for that long ends; over ssh, a server
	// that answers no keepalive for LowSpeedTime.
	LowSpeedLimit int
	LowSpeedTime  time.Duration
	// Timeout bounds each git call as a whole, whatever the transport.
	Timeout time.Duration
}

// DefaultRemoteLimits are the limits a zero RemoteLimits field takes.
var DefaultRemoteLimits = RemoteLimits{
	Connect:       landing.DefaultBounds.Connect,
	LowSpeedLimit: landing.DefaultBounds.LowSpeedLimit,
	LowSpeedTime:  landing.DefaultBounds.LowSpeedTime,
	Timeout:       landing.DefaultBounds.Deadline,
}

// bounds is m with each zero field DefaultRemoteLimits', in the landing's
// terms.
func (m RemoteLimits) bounds() landing.Bounds {
	d := DefaultRemoteLimits
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	b := landing.Bounds{Connect: pick(m.Connect, d.Connect), LowSpeedLimit: m.LowSpeedLimit, LowSpeedTime: pick(m.LowSpeedTime, d.LowSpeedTime), Deadline: pick(m.Timeout, d.Timeout)}
	if b.LowSpeedLimit <= 0 {
		b.LowSpeedLimit = d.LowSpeedLimit
	}
	return b
}

// RemoteTimeoutError: a remote did not answer within the RemoteLimits
// (RemoteLog; a landing refuses RemoteTimeout instead). Nothing was
// changed; trying again is the remedy.
type RemoteTimeoutError struct {
	Remote string // as given, masked
	Op     string // "fetch", "push" or "ls-remote"
	Said   string // what git said, or the bound it hit
}

func (e *RemoteTimeoutError) Error() string {
	return fmt.Sprintf("remote %s timed out: its %s got no answer (%s); nothing was changed: try again once it answers", e.Remote, e.Op, e.Said)
}

// remoteTimeout is err as a *RemoteTimeoutError when a git call against
// the remote timed out, else err.
func remoteTimeout(err error) error {
	var te *landing.TimeoutError
	if errors.As(err, &te) {
		return &RemoteTimeoutError{Remote: te.Remote, Op: te.Op, Said: te.Said}
	}
	return err
}

// timeoutRefusal is the refusal of a landing whose fetch timed out, nil
// for any other error.
func timeoutRefusal(err error) *Refusal {
	var te *landing.TimeoutError
	if !errors.As(err, &te) {
		return nil
	}
	return refuse(RemoteTimeout, nil, "remote %s timed out: its %s got no answer (%s); nothing was pushed and the transaction is kept: land it again once the remote answers", te.Remote, te.Op, te.Said)
}

// pushFailed is what a landing says of a push that did not land: a
// RemoteTimeout refusal when it timed out and the remote, asked after,
// still held the heads fetched; an error naming how to find out when
// whether it landed is unknown; else the push's error.
func (t *Tx) pushFailed(err error) (*Refusal, error) {
	var pe *landing.PushError
	if !errors.As(err, &pe) {
		return nil, err
	}
	switch {
	case pe.Unknown:
		return nil, stepErrorf("%w. Transaction %s is kept: see what %s holds (%s), or land it again: a landing that did land is found there and recorded, not pushed twice", err, t.ID(), pe.Remote, Step{Kind: StepRemoteLog, Remote: pe.Remote, Branch: strings.TrimPrefix(pe.Ref, "refs/heads/")})
	case pe.TimedOut:
		return refuse(RemoteTimeout, nil, "%v; the transaction is kept: land it again once the remote answers", err), nil
	}
	return nil, fmt.Errorf("%w; transaction %s is kept: land it again", err, t.ID())
}
