package receipt

import (
	"slices"
	"strings"
	"testing"
)

// A committed receipt names the paths it three-way merged; the member is
// optional (absent when nothing merged, and in every older receipt) and,
// when present, a non-empty list of raw-bytes paths in a committed
// receipt only.
func TestMergedMember(t *testing.T) {
	r := sample()
	r.Merged = []string{"notes.txt", "caf\xe9.txt"}
	data := seal(t, r)
	got, err := Verify(data)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !slices.Equal(got.Merged, r.Merged) {
		t.Errorf("round trip: %q, want %q", got.Merged, r.Merged)
	}
	plain := seal(t, sample())
	if strings.Contains(string(plain), `"merged"`) {
		t.Errorf("a receipt that merged nothing carries the member:\n%s", plain)
	}
	if _, err := Verify(plain); err != nil {
		t.Errorf("a receipt without the member (every older one) does not verify: %v", err)
	}
	for _, tc := range []struct {
		name    string
		value   any
		outcome string
		want    string
	}{
		{"empty list", []any{}, "committed", "is empty"},
		{"not a list", "notes.txt", "committed", "not a list"},
		{"discarded", []any{"notes.txt"}, "discarded", "only a commit merges"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := rawOf(t, plain)
			obj["merged"] = tc.value
			obj["outcome"] = tc.outcome
			if _, err := Verify(reseal(t, obj)); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"merged"`) {
				t.Errorf("Verify: %v, want an error naming \"merged\" that %s", err, tc.want)
			}
		})
	}
	obj := rawOf(t, data)
	obj["merged"] = []any{"notes.txt"}
	if _, err := Verify(encode(t, obj)); err == nil {
		t.Error("a receipt whose merged paths were edited verifies")
	}
}
