package commandline_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/commandline"
)

// The command line says what it has always said, though the core now
// names its steps in its own API's terms.
func TestMessageSaysTheCommandLine(t *testing.T) {
	recover := airlock.Step{Kind: airlock.StepRecover, Base: "/b"}
	moved := airlock.Step{Kind: airlock.StepRecoverMoved, Base: "/b"}
	step := &airlock.StepError{Err: fmt.Errorf("x failed over /b; nothing was done: if it moved, %s (%s cannot make it so); else %s", moved, airlock.Step{Kind: airlock.StepMoved}, recover),
		Steps: []airlock.Step{moved, {Kind: airlock.StepMoved}, recover}}
	err := fmt.Errorf("wrapped: %w", step)
	if s := err.Error(); strings.Contains(s, "airlock ") || strings.Contains(s, "--") {
		t.Errorf("the library's error names a command line: %q", s)
	}
	want := "wrapped: x failed over /b; nothing was done: if it moved, run `airlock recover --workdir /b --moved` (--moved cannot make it so); else run `airlock recover --workdir /b`"
	if got := commandline.Message(err); got != want {
		t.Errorf("the command line says\n%s\nwant\n%s", got, want)
	}

	c := &airlock.CancelledError{TxID: "t1", Cause: &airlock.InterruptedError{Signal: syscall.SIGTERM}}
	if got := commandline.Message(c); !strings.Contains(got, "commit it again (`airlock commit t1`) to validate and apply it") || strings.Contains(c.Error(), "airlock commit") {
		t.Errorf("a cancelled commit: the library says %q, the command line %q", c, got)
	}

	r := &airlock.Refusal{Kind: airlock.ProtectedPathNotApproved, Paths: []string{"p"}, Reason: "the change set touches protected paths", Remedy: airlock.Remedy{Kind: airlock.RemedyApprove, Tx: "t1"}}
	if got, want := commandline.Message(fmt.Errorf("commit: %w", r)), `commit: refused (ProtectedPathNotApproved): the change set touches protected paths; review them (airlock diff t1) and commit with --approve: "p"`; got != want {
		t.Errorf("a refusal: %q, want %q", got, want)
	}
	if s := r.Error(); strings.Contains(s, "airlock ") || strings.Contains(s, "--") {
		t.Errorf("the library's refusal names a command line: %q", s)
	}
}

func TestStepsInTheCommandLinesWords(t *testing.T) {
	for _, c := range []struct {
		step airlock.Step
		want string
	}{
		{airlock.Step{Kind: airlock.StepRecover, Base: "/b"}, "run `airlock recover --workdir /b`"},
		{airlock.Step{Kind: airlock.StepRecoverMoved, Base: "/b"}, "run `airlock recover --workdir /b --moved`"},
		{airlock.Step{Kind: airlock.StepRecoverMoved}, "run `airlock recover --workdir NEWPATH --moved`"},
		{airlock.Step{Kind: airlock.StepRecoverBaseGone, Base: "/b"}, "run `airlock recover --workdir /b --base-gone`"},
		{airlock.Step{Kind: airlock.StepMoved}, "--moved"},
		{airlock.Step{Kind: airlock.StepCommit, Tx: "t"}, "`airlock commit t`"},
		{airlock.Step{Kind: airlock.StepRemoteLog, Remote: "origin", Branch: "main"}, "`airlock log --remote origin --branch main`"},
	} {
		if got := commandline.Step(c.step); got != c.want {
			t.Errorf("%s: %q, want %q", c.step.Kind, got, c.want)
		}
		if s := c.step.String(); strings.Contains(s, "airlock ") || strings.Contains(s, "--") {
			t.Errorf("%s: the library names it %q, a command line", c.step.Kind, s)
		}
	}
}
