package landing

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/git"
)

func TestSSHOptionsFollowTheBounds(t *testing.T) {
	for _, tt := range []struct {
		b    Bounds
		want []string
	}{
		{Bounds{}, []string{"-o", "ConnectTimeout=30", "-o", "ServerAliveInterval=20", "-o", "ServerAliveCountMax=3"}},
		{Bounds{Connect: 1500 * time.Millisecond, LowSpeedTime: 2 * time.Second}, []string{"-o", "ConnectTimeout=2", "-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=3"}},
		{Bounds{Connect: time.Millisecond, LowSpeedTime: 5 * time.Minute}, []string{"-o", "ConnectTimeout=1", "-o", "ServerAliveInterval=100", "-o", "ServerAliveCountMax=3"}},
	} {
		if got := tt.b.SSHOptions(); !slices.Equal(got, tt.want) {
			t.Errorf("%+v.SSHOptions() = %q, want %q", tt.b, got, tt.want)
		}
	}
}

// TestTimedOutKnowsTheTransportsWords: what git, curl and ssh say when
// their own bound ends them is a timeout, as is a call whose deadline
// passed; a refusal or a missing repository is not.
func TestTimedOutKnowsTheTransportsWords(t *testing.T) {
	l := &Repo{Remote: "origin", access: &access{}}
	gitErr := func(stderr string) error { return &git.Error{Stderr: stderr, Err: errors.New("exit status 128")} }
	for _, tt := range []struct {
		stderr string
		want   bool
	}{
		{"fatal: unable to access 'http://h/r/': Operation too slow. Less than 1000 bytes/sec transferred the last 2 seconds", true},
		{"Connection timed out during banner exchange\nfatal: Could not read from remote repository.", true},
		{"Timeout, server h not responding.\nfatal: the remote end hung up unexpectedly", true},
		{"ssh: connect to host h port 22: Connection timed out", true},
		{"fatal: remote error: access denied or repository not exported: /r.git", false},
		{"fatal: the remote end hung up unexpectedly", false},
	} {
		if got := l.timedOut(context.Background(), "fetch", gitErr(tt.stderr)) != nil; got != tt.want {
			t.Errorf("timedOut(%q) = %v, want %v", tt.stderr, got, tt.want)
		}
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), 0, &deadlineError{after: 3 * time.Second})
	defer cancel()
	<-ctx.Done()
	te := l.timedOut(ctx, "push", gitErr(""))
	if te == nil || te.Op != "push" || te.Said != "no answer within 3s" {
		t.Errorf("a call past its deadline: got %+v", te)
	}
}
