package commandline

import (
	"strings"
	"testing"

	"github.com/airlockdev/airlock"
)

func TestRemedyRebaseAndResolve(t *testing.T) {
	if got := Remedy(airlock.Remedy{Kind: airlock.RemedyRebase, Tx: "t1"}); !strings.Contains(got, "`airlock rebase t1`") {
		t.Errorf("the MergeConflict remedy %q does not name `airlock rebase t1`", got)
	}
	got := Remedy(airlock.Remedy{Kind: airlock.RemedyResolve, Tx: "t1", Dir: "/s/t1/staged"})
	if !strings.Contains(got, "/s/t1/staged") || !strings.Contains(got, "`airlock commit t1`") {
		t.Errorf("the Conflicted remedy %q does not say where to resolve and what to run", got)
	}
}
