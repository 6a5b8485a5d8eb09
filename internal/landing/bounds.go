package landing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/airlockdev/airlock/internal/git"
)

// Bounds limit every git call a landing makes against the remote (fetch,
// push, ls-remote), so that a remote that accepts the connection and
// never answers cannot hang airlock. A zero field takes its default.
type Bounds struct {
	// Connect bounds ssh's connection and handshake (ssh's
	// ConnectTimeout). git:// and http(s) have no connect bound of their
	// own in git: Deadline bounds them.
	Connect time.Duration
	// LowSpeedLimit and LowSpeedTime: an http(s) transfer slower than
	// LowSpeedLimit bytes a second for LowSpeedTime ends (git's
	// http.lowSpeedLimit and http.lowSpeedTime); over ssh, a server that
	// answers no keepalive for LowSpeedTime (ssh's ServerAliveInterval
	// and ServerAliveCountMax).
	LowSpeedLimit int
	LowSpeedTime  time.Duration
	// Deadline bounds each git call against the remote as a whole,
	// whatever the transport: its process group is killed then.
	Deadline time.Duration
}

// DefaultBounds are the bounds a zero field takes: long enough for a
// large fetch over a slow link, short enough that a dead remote is
// noticed within minutes, not never.
var DefaultBounds = Bounds{Connect: 30 * time.Second, LowSpeedLimit: 1000, LowSpeedTime: time.Minute, Deadline: 10 * time.Minute}

// withDefaults is b with each zero field its default.
func (b Bounds) withDefaults() Bounds {
	d := DefaultBounds
	if b.Connect > 0 {
		d.Connect = b.Connect
	}
	if b.LowSpeedLimit > 0 {
		d.LowSpeedLimit = b.LowSpeedLimit
	}
	if b.LowSpeedTime > 0 {
		d.LowSpeedTime = b.LowSpeedTime
	}
	if b.Deadline > 0 {
		d.Deadline = b.Deadline
	}
	return d
}

// seconds is d in whole seconds, at least 1: what git and ssh take.
func seconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// SSHOptions are the ssh options that bound a connection: its connect and
// handshake, and a server gone silent after it. Kept apart so that other
// ssh options (batch mode) join them in one command.
func (b Bounds) SSHOptions() []string {
	b = b.withDefaults()
	// ssh gives up after CountMax unanswered keepalives, one per
	// Interval: their product is the silence it bears.
	const count = 3
	return []string{
		"-o", "ConnectTimeout=" + strconv.Itoa(seconds(b.Connect)),
		"-o", "ServerAliveInterval=" + strconv.Itoa(max(1, seconds(b.LowSpeedTime)/count)),
		"-o", "ServerAliveCountMax=" + strconv.Itoa(count),
	}
}

// remote is the landing's repository set up for one git call against the
// remote: with the clone's access settings (remoteGit), tethered (its
// process group ends with the call and with airlock), http bounded by a
// low-speed limit, ssh in batch mode and bounded by its own options unless
// the user chose the ssh command (then it is theirs, as it is for `git
// fetch` in the clone, and only the deadline bounds it), and ctx bounded
// by the deadline.
func (l *Repo) remote(ctx context.Context) (git.Repo, context.Context, context.CancelFunc) {
	b := l.Bounds.withDefaults()
	r := l.remoteGit().Tethered().WithEnv(
		// The environment outranks every config file, as the user's
		// own GIT_HTTP_LOW_SPEED_* would; these are airlock's bounds.
		"GIT_HTTP_LOW_SPEED_LIMIT="+strconv.Itoa(b.LowSpeedLimit),
		"GIT_HTTP_LOW_SPEED_TIME="+strconv.Itoa(seconds(b.LowSpeedTime)),
	)
	if l.access.batch {
		r = r.WithEnv("GIT_SSH_COMMAND=" + batchSSH + " " + strings.Join(b.SSHOptions(), " "))
	}
	ctx, cancel := context.WithTimeoutCause(ctx, b.Deadline, &deadlineError{after: b.Deadline})
	return r, ctx, cancel
}

// deadlineError is the cause of a git call's context ending at its
// deadline.
type deadlineError struct{ after time.Duration }

func (e *deadlineError) Error() string {
	return fmt.Sprintf("no answer within %s", e.after)
}

// TimeoutError is a git call against the remote that timed out: it hit
// its deadline, or git's own bound (http's low-speed limit, ssh's connect
// timeout or keepalives) ended it. Nothing it would have changed on the
// remote changed, unless the caller says otherwise.
type TimeoutError struct {
	Remote string // as the caller named it, masked
	Op     string // what timed out: "fetch", "push", "ls-remote"
	Said   string // what git said, or the deadline
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s of %s timed out (%s)", e.Op, e.Remote, e.Said)
}

// timedOut is err as a *TimeoutError when the call timed out, else nil:
// its context hit the deadline, or git, curl or ssh said it gave up
// waiting (git's messages are in English: LC_ALL=C).
func (l *Repo) timedOut(ctx context.Context, op string, err error) *TimeoutError {
	var d *deadlineError
	if errors.As(context.Cause(ctx), &d) {
		return &TimeoutError{Remote: l.Remote, Op: op, Said: d.Error()}
	}
	said := gitSaid(err)
	for _, s := range []string{
		"Operation too slow",             // curl's low-speed limit
		"Connection timed out",           // ssh's ConnectTimeout, TCP's own
		"Operation timed out",            // curl's on other systems
		"Timeout, server",                // ssh's keepalives: "Timeout, server HOST not responding."
		"timed out during banner",        // ssh's ConnectTimeout over a silent server
		"Connection to the server timed", // curl
	} {
		if strings.Contains(said, s) {
			return &TimeoutError{Remote: l.Remote, Op: op, Said: l.mask(said)}
		}
	}
	return nil
}
