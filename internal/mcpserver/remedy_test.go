package mcpserver

import (
	"strings"
	"testing"

	"github.com/airlockdev/airlock"
)

// TestRemedyRebaseAndResolve: a MergeConflict's remedy names the user's
// `airlock rebase ID` (no tool here rebases), and a Conflicted one says
// where to edit the markers out.
func TestRemedyRebaseAndResolve(t *testing.T) {
	for _, tc := range []struct {
		m    airlock.Remedy
		want []string
	}{
		{airlock.Remedy{Kind: airlock.RemedyRebase, Tx: "t1"}, []string{"`airlock rebase t1`", "no tool here"}},
		{airlock.Remedy{Kind: airlock.RemedyResolve, Tx: "t1", Dir: "/state/tx/t1/staged"}, []string{"/state/tx/t1/staged", "<<<<<<<", "commit again"}},
	} {
		got := remedy(tc.m)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("remedy(%+v) = %q, want it to say %q", tc.m, got, w)
			}
		}
	}
}
