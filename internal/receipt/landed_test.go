package receipt

import (
	"strings"
	"testing"
)

// A receipt of a landing into a remote names the branch and the commit;
// both members are optional, but only together, only in their form, and
// only on a committed receipt.
func TestLandedMembers(t *testing.T) {
	commit := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		name           string
		branch, commit string
		outcome        string
		wantErr        string
	}{
		{"both", "refs/heads/main", commit, "committed", ""},
		{"nested branch", "refs/heads/team/land", strings.Repeat("c", 64), "committed", ""},
		{"short branch name", "main", commit, "committed", `"landed_branch"`},
		{"no branch after the prefix", "refs/heads/", commit, "committed", `"landed_branch"`},
		{"not a commit", "refs/heads/main", "HEAD", "committed", `"landed_commit"`},
		{"not committed", "refs/heads/main", commit, "discarded", `"outcome"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sample()
			r.Outcome = tc.outcome
			r.LandedBranch, r.LandedCommit = tc.branch, tc.commit
			got := roundTrip(t, r, tc.wantErr)
			if got == nil {
				return
			}
			if got.LandedBranch != tc.branch || got.LandedCommit != tc.commit {
				t.Errorf("round trip: landed_branch %q landed_commit %q", got.LandedBranch, got.LandedCommit)
			}
		})
	}
	r := sample()
	data := seal(t, r)
	obj := rawOf(t, data)
	obj["landed_commit"] = commit
	if _, err := Verify(reseal(t, obj)); err == nil || !strings.Contains(err.Error(), "both or neither") {
		t.Errorf("a receipt with landed_commit but no landed_branch: %v", err)
	}
	if strings.Contains(string(data), `"landed_`) {
		t.Errorf("a receipt of a local commit carries landed members:\n%s", data)
	}
	// RemoteMoved is a refusal kind a receipt may carry.
	r = sample()
	r.Outcome, r.Refusal = "refused", "RemoteMoved"
	if _, err := r.Seal(); err != nil {
		t.Errorf("a RemoteMoved refusal: %v", err)
	}
}
