package main_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EMCPCancelledCommit: a client that cancels a commit call (Claude
// Code's Esc) must not be told "cancelled" while the commit goes on and
// lands. Over stdio with the SDK's client, the commit is paused at a
// point, the call cancelled, and the commit let go on: cancelled before
// its journal, nothing lands and the transaction is as it was (a later
// commit lands it); cancelled after its journal, the commit runs to its
// end and its status says committed — the real outcome, never a lie.
func TestE2EMCPCancelledCommit(t *testing.T) {
	for _, tc := range []struct {
		point      string
		wantStatus string
		lands      bool
	}{
		{"checked", "open", false},
		{"journal-synced", "committed", true},
	} {
		t.Run(tc.point, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
			pause := testbin.RealDir(t)
			ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
			defer cancel()
			cmd := testbin.Cmd{Bin: airlockBin, Args: []string{"mcp"}, Dir: x.base,
				Env: x.environ("AIRLOCK_TEST_PAUSE=" + tc.point + ":" + pause)}.Command(ctx)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			defer cs.Close()
			call := func(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil {
					return nil, err
				}
				out, _ := res.StructuredContent.(map[string]any)
				if res.IsError {
					return out, errors.New("tool error")
				}
				return out, nil
			}
			o, err := call(ctx, "open", map[string]any{"path": "."})
			if err != nil {
				t.Fatal(err)
			}
			id, staged := o["id"].(string), o["path"].(string)
			writeFile(t, filepath.Join(staged, "a.txt"), "b\n")

			callCtx, cancelCall := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := call(callCtx, "commit", map[string]any{"id": id})
				done <- err
			}()
			waitFile(t, filepath.Join(pause, "reached"))
			cancelCall()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("the cancelled call returned %v", err)
			}
			// The client has sent notifications/cancelled, which the
			// server's reader passes to the handler on its own schedule:
			// the commit goes on only once its context is done
			// (fault.WhenDone), however long that took.
			waitFile(t, filepath.Join(pause, "commit-cancelled"))
			must(t, os.WriteFile(filepath.Join(pause, "continue"), nil, 0o600))

			// status tells the outcome, whatever the cancelled call was
			// told; it waits for the commit, which holds the lock.
			var info map[string]any
			for deadline := time.Now().Add(commandTimeout); ; time.Sleep(50 * time.Millisecond) {
				if info, err = call(ctx, "status", map[string]any{"id": id}); err != nil {
					t.Fatal(err)
				}
				if info["status"] == tc.wantStatus && (tc.lands == (testbin.ReadFile(t, filepath.Join(x.base, "a.txt")) == "b\n")) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("status %v, base a.txt %q; want %s, landed %v\nstderr:\n%s", info["status"], testbin.ReadFile(t, filepath.Join(x.base, "a.txt")), tc.wantStatus, tc.lands, stderr.String())
				}
			}
			if !tc.lands {
				// Stopped before its journal: nothing recorded, and the
				// transaction commits when asked again.
				s, err := call(ctx, "commit", map[string]any{"id": id})
				if err != nil || s["outcome"] != "committed" || testbin.ReadFile(t, filepath.Join(x.base, "a.txt")) != "b\n" {
					t.Errorf("the commit after a cancelled one: %v %v", s, err)
				}
			}
		})
	}
}
