package git

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// silentListener accepts connections on 127.0.0.1 and never answers; each
// accepted connection is sent on the channel.
func silentListener(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			conns <- c
		}
	}()
	return l.Addr().String(), conns
}

// TestTetheredEndsGitsChildrenWithTheContext: a tethered fetch from an
// http server that never answers is ended whole when its context ends:
// git-remote-http, the child that holds the connection (git alone would
// be killed and leave it running), closes it at once.
func TestTetheredEndsGitsChildrenWithTheContext(t *testing.T) {
	dir := repo(t)
	addr, conns := silentListener(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := In(dir).Tethered().Run(ctx, "fetch", "http://"+addr+"/r.git", "main")
		done <- err
	}()
	var c net.Conn
	select {
	case c = <-conns:
	case err := <-done:
		t.Fatalf("fetch ended before it connected: %v", err)
	}
	cancel()
	// The request may arrive first: read on to the close, which comes
	// when the last process holding the connection is gone.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var err error
	for err == nil {
		_, err = c.Read(make([]byte, 4096))
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection stayed open 30s after the context ended: a child of git survived")
	}
	err = <-done
	var ge *Error
	if !errors.As(err, &ge) || !strings.Contains(ge.Error(), "stopped") {
		t.Errorf("a fetch whose context ended: want a stopped *Error, got %v", err)
	}
}

// TestTetheredPassesInputAndStatus: under the tether git still reads its
// standard input and its exit status and stderr are its own.
func TestTetheredPassesInputAndStatus(t *testing.T) {
	dir := repo(t)
	r := In(dir).Tethered()
	got, err := r.RunInput(t.Context(), []byte("hello\n"), "hash-object", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "-C", dir, "hash-object", "--stdin")
	cmd.Stdin = strings.NewReader("hello\n")
	want, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("tethered hash-object --stdin = %q, want %q", got, want)
	}
	_, err = r.Run(t.Context(), "rev-parse", "--verify", "no-such-ref")
	var ge *Error
	var exit *exec.ExitError
	if !errors.As(err, &ge) || !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(ge.Stderr, "Needed a single revision") {
		t.Errorf("a failing tethered git: want its exit status and stderr, got %v", err)
	}
}
