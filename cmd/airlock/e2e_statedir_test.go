package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2ERelativeStateDirRefused: a relative AIRLOCK_STATE_DIR names
// another state root from every working directory, so a `recover` run
// from elsewhere after a crash would find nothing, and an `open` from
// there would go ahead over the half-applied base. Every command that
// reads the state root refuses it, exit 125, naming the variable and
// asking for an absolute path, before anything is staged or written: no
// state root appears where the relative path points (here, inside the
// base), the base is untouched, and the transaction the real state root
// holds is as it was.
func TestE2ERelativeStateDirRefused(t *testing.T) {
	x := newH(t)
	build(t, x.base, tree{"a.txt": F(0o644, "a\n")})
	staged := x.openTx("t1")
	writeFile(t, filepath.Join(staged, "a.txt"), "b\n")
	before := snapshot(t, x.base, nil)

	hookIn := `{"session_id":"s","cwd":"` + x.base + `","hook_event_name":"SessionEnd","reason":"exit"}`
	for _, args := range [][]string{
		{"run", "--", "true"},
		{"open"},
		{"commit", "t1"},
		{"discard", "t1"},
		{"recover"},
		{"list"},
		{"show", "t1"},
		{"diff", "t1"},
		{"log"},
		{"undo"},
		{"gc"},
		{"doctor"},
		{"review", "t1"},
		{"mcp"},
		{"hook", "claude", "session-end"},
		{"land", "t1"},
		{"receipt", "verify", "t1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			for _, rel := range []string{"state", "./s/airlock"} {
				r := testbin.Run(t, testbin.Cmd{Bin: airlockBin, Args: args, Dir: x.base, Stdin: hookIn,
					Env: x.environ("AIRLOCK_STATE_DIR=" + rel), Timeout: commandTimeout})
				if r.Code != 125 {
					t.Fatalf("AIRLOCK_STATE_DIR=%s: exit %d, want 125\n%s", rel, r.Code, r)
				}
				for _, want := range []string{"AIRLOCK_STATE_DIR=\"" + rel + "\"", "relative path", "absolute path", filepath.Join(x.base, rel)} {
					if !strings.Contains(r.Stderr, want) {
						t.Errorf("AIRLOCK_STATE_DIR=%s: stderr does not say %q\n%s", rel, want, r)
					}
				}
			}
			wantTree(t, "base after a refused state dir", before, snapshot(t, x.base, nil))
		})
	}
	// Nothing the refused commands did reached the real state root either.
	r := x.airlock("show", "t1", "--json")
	wantCode(t, r, 0)
	if !strings.Contains(r.Stdout, `"status": "open"`) {
		t.Errorf("t1 after the refused commands:\n%s", r)
	}
}
