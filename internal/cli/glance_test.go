package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/receipt"
)

// TestGlance: the lines a person reads for each kind of settle, at most
// three, the next step from the refusal's remedy (as data) or its kind.
func TestGlance(t *testing.T) {
	refused := func(r *airlock.Refusal) *airlock.Result {
		return &airlock.Result{TxID: "t1", Outcome: airlock.Refused, Refusal: r, Added: 1}
	}
	tests := []struct {
		name  string
		res   *airlock.Result
		cause string
		want  string
	}{
		{"committed", &airlock.Result{TxID: "t1", Outcome: airlock.Committed, Added: 3, Modified: 1}, "",
			"airlock: committed t1\nairlock: +3 ~1 -0\n"},
		{"committed, merged", &airlock.Result{TxID: "t1", Outcome: airlock.Committed, Modified: 2, Merged: []string{"a", "b"}}, "",
			"airlock: committed t1\nairlock: +0 ~2 -0, 2 merged with the base's own changes\n"},
		{"committed part", &airlock.Result{TxID: "t1.1", Outcome: airlock.Committed, Modified: 1, PartOf: "t1",
			Receipt: &airlock.Receipt{PartOf: "t1", Paths: []string{"src/a.go"}}}, "",
			"airlock: committed t1.1 (\"src/a.go\"); t1 stays open with the rest\nairlock: +0 ~1 -0\n"},
		{"protected, partial", refused(&airlock.Refusal{Kind: airlock.ProtectedPathNotApproved, Paths: []string{".envrc"}, Reason: "the change set touches protected paths",
			Remedy: airlock.Remedy{Kind: airlock.RemedyApprove, Tx: "t1", Paths: []string{".envrc", "my file"}}}), "",
			"airlock: refused t1 (protected paths, not approved): the change set touches protected paths: \".envrc\"\n" +
				"airlock: +1 ~0 -0 kept in the transaction, not applied\n" +
				"airlock: next: airlock diff t1, then airlock commit t1 --approve -- .envrc 'my file'\n"},
		{"no changes", &airlock.Result{TxID: "t1", Outcome: airlock.NoChanges}, "",
			"airlock: no changes in t1; the base is untouched\n"},
		{"discarded by a failed run", &airlock.Result{TxID: "t1", Outcome: airlock.Discarded, Deleted: 2}, "the command exited 3",
			"airlock: the command exited 3: discarded t1; the base is untouched\nairlock: +0 ~0 -2 dropped\n"},
		{"committed before", &airlock.Result{TxID: "t1", Outcome: airlock.Committed, Repeat: true, Added: 1}, "",
			"airlock: already committed t1\nairlock: +1 ~0 -0\n"},
		{"protected", refused(&airlock.Refusal{Kind: airlock.ProtectedPathNotApproved, Paths: []string{".envrc"}, Reason: "the change set touches protected paths",
			Remedy: airlock.Remedy{Kind: airlock.RemedyApprove, Tx: "t1"}}), "",
			"airlock: refused t1 (protected paths, not approved): the change set touches protected paths: \".envrc\"\n" +
				"airlock: +1 ~0 -0 kept in the transaction, not applied\n" +
				"airlock: next: airlock diff t1, then airlock commit t1 --approve\n"},
		{"stale review", refused(&airlock.Refusal{Kind: airlock.ReviewStale, Reason: "the change set changed since it was reviewed",
			Remedy: airlock.Remedy{Kind: airlock.RemedyReviewAgain, Tx: "t1"}}), "",
			"airlock: refused t1 (changed since it was reviewed): the change set changed since it was reviewed\n" +
				"airlock: +1 ~0 -0 kept in the transaction, not applied\n" +
				"airlock: next: airlock diff t1, then airlock commit t1 --expect-digest DIGEST (airlock show t1 prints it)\n"},
		{"interrupted", refused(&airlock.Refusal{Kind: airlock.InterruptedApply, Reason: "an apply of transaction t0 over /b was interrupted",
			Remedy: airlock.Remedy{Kind: airlock.RemedyRecover, Base: "/b"}}), "",
			"airlock: refused t1 (an interrupted apply): an apply of transaction t0 over /b was interrupted\n" +
				"airlock: +1 ~0 -0 kept in the transaction, not applied\n" +
				"airlock: next: airlock recover --workdir /b\n"},
		{"still writing", refused(&airlock.Refusal{Kind: airlock.StagedChanged, Paths: []string{"a", "b", "c", "d", "e"}, Reason: "changed while read"}), "",
			"airlock: refused t1 (the staged files are still changing): changed while read: \"a\", \"b\", \"c\", and 2 more\n" +
				"airlock: +1 ~0 -0 kept in the transaction, not applied\n" +
				"airlock: next: airlock commit t1\n"},
		{"drift", refused(&airlock.Refusal{Kind: airlock.BaseDrift, Paths: []string{"a"}, Reason: "changed in the base since the transaction opened, and cannot be merged"}), "",
			"airlock: refused t1 (the base changed): changed in the base since the transaction opened, and cannot be merged: \"a\"\n" +
				"airlock: +1 ~0 -0 kept in the transaction, not applied\n" +
				"airlock: next: airlock diff t1\n"},
		{"refused before: from the receipt", &airlock.Result{TxID: "t1", Outcome: airlock.Refused, Repeat: true,
			Receipt: &airlock.Receipt{Refusal: "ValidationFailed"}}, "",
			"airlock: already refused t1 (validation failed)\n" +
				"airlock: +0 ~0 -0 kept in the transaction, not applied\n" +
				"airlock: next: airlock diff t1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			writeGlance(&b, tt.res, tt.cause)
			if got := b.String(); got != tt.want {
				t.Errorf("glance:\n%s\nwant:\n%s", got, tt.want)
			}
			if n := strings.Count(b.String(), "\n"); n > 3 {
				t.Errorf("%d lines: a glance has three at most", n)
			}
		})
	}
}

// TestRefusalWordsEveryKind: every refusal kind a receipt may hold reads
// as words of its own in the glance, not as its identifier.
func TestRefusalWordsEveryKind(t *testing.T) {
	seen := map[string]string{}
	for _, k := range receipt.RefusalKinds {
		w := refusalWords(airlock.RefusalKind(k))
		if w == k || w == "" {
			t.Errorf("refusal kind %s has no words in the glance (refusalWords)", k)
		}
		if other, dup := seen[w]; dup {
			t.Errorf("refusal kinds %s and %s read the same: %q", other, k, w)
		}
		seen[w] = k
	}
}

// TestReport: where stderr is not a terminal, or with --block, a settle
// prints the block exactly; on a terminal the glance, which tells a
// refusal so that Main does not say it again, and whose exit code stays
// the refusal's; --quiet prints only the warnings.
func TestReport(t *testing.T) {
	r := &airlock.Refusal{Kind: airlock.ValidationFailed, Reason: "validator `false` exited 1"}
	res := &airlock.Result{TxID: "t1", Outcome: airlock.Refused, Refusal: r, Modified: 1, Warnings: []string{"the receipt copy was not written"}}
	var block bytes.Buffer
	writeBlock(&block, res)
	tests := []struct {
		name     string
		terminal bool
		o        output
		want     string
		told     bool
	}{
		{"a pipe", false, output{}, block.String(), false},
		{"a pipe, --block", false, output{block: true}, block.String(), false},
		{"a terminal, --block", true, output{block: true}, block.String(), false},
		{"a terminal", true, output{}, "airlock: refused t1 (validation failed): validator `false` exited 1\n" +
			"airlock: +0 ~1 -0 kept in the transaction, not applied\n" +
			"airlock: next: airlock diff t1\n" +
			"airlock: warning: the receipt copy was not written\n", true},
		{"a terminal, --quiet", true, output{quiet: true}, "airlock: warning: the receipt copy was not written\n", false},
		{"a pipe, --quiet", false, output{quiet: true}, "airlock: warning: the receipt copy was not written\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errw bytes.Buffer
			err := report(context.Background(), IO{Err: &errw, ErrTerminal: tt.terminal}, tt.o, res, "", r)
			if got := errw.String(); got != tt.want {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, tt.want)
			}
			if silent(err) != tt.told {
				t.Errorf("Main prints the refusal again: %v; want %v", !silent(err), !tt.told)
			}
			if c := ExitCode(err); c != exitRefused {
				t.Errorf("exit code %d, want %d", c, exitRefused)
			}
		})
	}
}
