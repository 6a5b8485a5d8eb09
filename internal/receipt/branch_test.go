package receipt

import (
	"strings"
	"testing"
)

// A worktree transaction's receipt names its branch and that branch's head;
// both members are optional, but only together, and only in their form.
func TestBranchMembers(t *testing.T) {
	head := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		name         string
		branch, head string
		wantErr      string
	}{
		{"both", "airlock/20261129-190233-4f2a", head, ""},
		{"sha256 repository", "airlock/20261129-190233-4f2a", strings.Repeat("c", 64), ""},
		{"another transaction's branch", "airlock/other", head, `"branch"`},
		{"not a commit", "airlock/20261129-190233-4f2a", "HEAD", `"branch_head"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sample()
			r.Backend = "worktree"
			r.Branch, r.BranchHead = tc.branch, tc.head
			got := roundTrip(t, r, tc.wantErr)
			if got == nil {
				return
			}
			if got.Branch != tc.branch || got.BranchHead != tc.head {
				t.Errorf("round trip: branch %q head %q", got.Branch, got.BranchHead)
			}
		})
	}
	// One without the other is not a receipt Seal writes.
	r := sample()
	data := seal(t, r)
	obj := rawOf(t, data)
	obj["branch"] = "airlock/" + r.TxID
	if _, err := Verify(reseal(t, obj)); err == nil || !strings.Contains(err.Error(), "both or neither") {
		t.Errorf("a receipt with branch but no branch_head: %v", err)
	}
	// A plain receipt has neither member.
	if strings.Contains(string(data), `"branch`) {
		t.Errorf("a receipt without a branch carries branch members:\n%s", data)
	}
}

// roundTrip seals r and verifies what it wrote. With wantErr, Seal must
// refuse naming it, and roundTrip returns nil.
func roundTrip(t *testing.T, r *Receipt, wantErr string) *Receipt {
	t.Helper()
	data, err := r.Seal()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("Seal: err %v, want one naming %s", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	got, err := Verify(data)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return got
}
