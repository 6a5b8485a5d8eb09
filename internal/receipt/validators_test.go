package receipt

import (
	"slices"
	"strings"
	"testing"
)

// A receipt names the validators the settle ran, in order; the member is
// optional (left out when none ran) and, when present, a list of
// non-empty commands in the raw-bytes form of command.
func TestValidatorsMember(t *testing.T) {
	r := sample()
	r.Validators = []string{"go test ./...", "make lint && echo <ok>", "caf\xe9"}
	data := seal(t, r)
	if !strings.Contains(string(data), `"make lint && echo <ok>"`) || !strings.Contains(string(data), `"base64": "Y2Fm6Q=="`) {
		t.Errorf("validators not written as raw bytes, unescaped:\n%s", data)
	}
	got, err := Verify(data)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !slices.Equal(got.Validators, r.Validators) {
		t.Errorf("round trip: %q, want %q", got.Validators, r.Validators)
	}

	// None ran: no member at all.
	plain := seal(t, sample())
	if strings.Contains(string(plain), `"validators"`) {
		t.Errorf("a receipt without validators carries the member:\n%s", plain)
	}

	for _, tc := range []struct {
		name  string
		value any
		want  string
	}{
		{"empty list", []any{}, "is empty"},
		{"empty command", []any{""}, "item 0 is empty"},
		{"not a list", "true", "not a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := rawOf(t, plain)
			obj["validators"] = tc.value
			if _, err := Verify(reseal(t, obj)); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"validators"`) {
				t.Errorf("Verify: %v, want an error naming \"validators\" that %s", err, tc.want)
			}
		})
	}

	// Dropping a validator from a sealed receipt is an edit the digest
	// shows.
	obj := rawOf(t, data)
	obj["validators"] = []any{"go test ./..."}
	if _, err := Verify(encode(t, obj)); err == nil {
		t.Error("a receipt whose validators were edited verifies")
	}
}
