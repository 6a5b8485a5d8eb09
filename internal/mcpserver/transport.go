package mcpserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answering is t whose connection reports the end of its input only once
// every call read before that end has been answered.
//
// The SDK's connection, once its reader sees EOF, cancels every call in
// flight and refuses to write their replies: a client that writes its
// requests and closes its end (a script piping requests into `airlock
// mcp`, a client that half-closes as it stops) lost the replies of every
// call still running, 3 of 5 in the run. Holding the EOF back
// until those replies are written lets them out, and the server ends as
// before once they are.
//
// A call the server makes to the client after its input ended (an
// elicitation, for a client on an older protocol) can never be answered,
// and a handler waiting on it would wait forever: then, and when a write
// fails, the EOF goes through at once, as it would without this.
func answering(t mcp.Transport) mcp.Transport { return answeringTransport{t} }

type answeringTransport struct{ mcp.Transport }

func (t answeringTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answeringConn{Connection: c, unanswered: map[jsonrpc.ID]bool{}, asked: map[jsonrpc.ID]bool{},
		drained: make(chan struct{}), closed: make(chan struct{})}, nil
}

type answeringConn struct {
	mcp.Connection

	mu sync.Mutex
	// unanswered are the client's calls read and not yet answered; asked
	// the server's calls to the client not yet answered.
	unanswered, asked map[jsonrpc.ID]bool
	// ended says the input has ended; drained is closed once it has and
	// nothing more is worth waiting for.
	ended       bool
	drained     chan struct{}
	drainedOnce sync.Once
	closed      chan struct{}
	closeOnce   sync.Once
}

func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	c.mu.Lock()
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.IsCall() {
			c.unanswered[m.ID] = true
		}
	case *jsonrpc.Response:
		delete(c.asked, m.ID)
	}
	if err != nil {
		c.ended = true
		c.check()
	}
	c.mu.Unlock()
	if err == nil {
		return msg, nil
	}
	select {
	case <-c.drained:
	case <-c.closed:
	case <-ctx.Done():
	}
	return nil, err
}

func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		delete(c.unanswered, m.ID)
	case *jsonrpc.Request:
		if m.IsCall() {
			c.asked[m.ID] = true
		}
	}
	if err != nil {
		// Nothing more will reach the client: waiting serves no one.
		c.drain()
		return err
	}
	c.check()
	return nil
}

func (c *answeringConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// check lets the EOF through once the input has ended and either every
// call is answered or the server waits on a call of its own no one will
// answer. c.mu is held.
func (c *answeringConn) check() {
	if c.ended && (len(c.unanswered) == 0 || len(c.asked) > 0) {
		c.drain()
	}
}

func (c *answeringConn) drain() { c.drainedOnce.Do(func() { close(c.drained) }) }
