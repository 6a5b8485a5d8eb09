package receipt

import (
	"strings"
	"testing"
)

// A landed receipt says how it was validated: alone, or as part of a
// batch whose tip tree it names; only a landed receipt whose validators
// ran says it, and batch_tree goes with "batch" alone.
func TestValidatedMembers(t *testing.T) {
	commit, tree := strings.Repeat("ab", 20), strings.Repeat("cd", 20)
	for _, tc := range []struct {
		name             string
		landed           bool
		validators       []string
		validated, batch string
		wantErr          string
	}{
		{"alone", true, []string{"make test"}, ValidatedAlone, "", ""},
		{"batch", true, []string{"make test"}, ValidatedBatch, tree, ""},
		{"batch, sha256 tree", true, []string{"make test"}, ValidatedBatch, strings.Repeat("e", 64), ""},
		{"neither", true, []string{"make test"}, "", "", ""},
		{"batch without its tree", true, []string{"make test"}, ValidatedBatch, "", `"batch_tree" is missing`},
		{"alone with a tree", true, []string{"make test"}, ValidatedAlone, tree, `"batch_tree" is there`},
		{"a tree alone", true, []string{"make test"}, "", tree, `"batch_tree" is there without`},
		{"not a tree id", true, []string{"make test"}, ValidatedBatch, "HEAD", `"batch_tree" is "HEAD"`},
		{"another word", true, []string{"make test"}, "twice", "", `"validated" is "twice"`},
		{"no validators ran", true, nil, ValidatedAlone, "", "names no validators"},
		{"not landed", false, []string{"make test"}, ValidatedAlone, "", "names no landed commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sample()
			r.Validators = tc.validators
			if tc.landed {
				r.LandedBranch, r.LandedCommit = "refs/heads/main", commit
			}
			r.Validated, r.BatchTree = tc.validated, tc.batch
			got := roundTrip(t, r, tc.wantErr)
			if got == nil {
				return
			}
			if got.Validated != tc.validated || got.BatchTree != tc.batch {
				t.Errorf("round trip: validated %q batch_tree %q", got.Validated, got.BatchTree)
			}
		})
	}
	// The members count in the digest like any other.
	r := sample()
	r.Validators = []string{"make test"}
	r.LandedBranch, r.LandedCommit = "refs/heads/main", commit
	r.Validated, r.BatchTree = ValidatedBatch, tree
	obj := rawOf(t, seal(t, r))
	obj["batch_tree"] = strings.Repeat("ef", 20)
	if _, err := Verify(encode(t, obj)); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Errorf("a receipt whose batch_tree was changed after sealing: %v", err)
	}
}
