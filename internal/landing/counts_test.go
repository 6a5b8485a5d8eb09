package landing

import (
	"testing"

	"github.com/airlockdev/airlock/internal/receipt"
)

// countsCover accepts every count an honest landing writes for a commit
// (the change set's counts, which may hold changes git does not see) and
// refuses counts that cannot account for what the commit changed.
func TestCountsCover(t *testing.T) {
	for _, tc := range []struct {
		name    string
		paths   []string
		status  string
		a, m, d int
		ok      bool
	}{
		{"one add", []string{"f"}, "A", 1, 0, 0, true},
		{"one add said modified", []string{"f"}, "A", 0, 5, 0, false},
		{"one add said nothing", []string{"f"}, "A", 0, 0, 0, false},
		{"more than the commit shows", []string{"f"}, "A", 3, 2, 1, true},
		{"a modify said added", []string{"f"}, "M", 1, 0, 0, false},
		{"a type change", []string{"f"}, "T", 0, 1, 0, true},
		{"a delete said modified", []string{"f"}, "D", 0, 1, 0, true},
		{"a delete said added", []string{"f"}, "D", 1, 0, 0, false},
		// The directory d made a file: set counts +0 ~1 -1.
		{"dir made file", []string{"d", "d/x"}, "AD", 0, 1, 1, true},
		{"dir made file, the modify twice", []string{"d", "d/x", "e"}, "ADM", 0, 1, 1, false},
		// The file d made a directory holding y: set counts +1 ~1 -0.
		{"file made dir", []string{"d", "d/y"}, "DA", 1, 1, 0, true},
		{"file made dir said one modify", []string{"d", "d/y"}, "DA", 0, 1, 0, false},
		{"nothing changed", nil, "", 0, 2, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := &receipt.Receipt{Added: tc.a, Modified: tc.m, Deleted: tc.d}
			why := countsCover(tc.paths, []byte(tc.status), rc)
			if (why == "") != tc.ok {
				t.Errorf("countsCover(%v %q, +%d ~%d -%d) = %q, want ok %v", tc.paths, tc.status, tc.a, tc.m, tc.d, why, tc.ok)
			}
		})
	}
}
