package hook

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestTxID(t *testing.T) {
	cases := map[string]string{
		"feature-auth":          "feature-auth",
		"bold-oak-a3f2":         "bold-oak-a3f2",
		"feat/auth login":       "feat-auth-login",
		"":                      "",
		"..":                    "",
		"é":                     "-",
		string(make([]byte, 0)): "",
	}
	for in, want := range cases {
		if got := txID(in); got != want {
			t.Errorf("txID(%q) = %q, want %q", in, got, want)
		}
	}
	long := txID(string(bytes.Repeat([]byte("a"), 100)))
	if len(long) != 64 {
		t.Errorf("a long name gives an id of %d bytes, want 64", len(long))
	}
	if u := uniqueID(long, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); len(u) != 64 || u[len(u)-20:] != "-20260102-030405.000" {
		t.Errorf("uniqueID = %q", u)
	}
}

// FuzzMergeHooks: whatever a settings file holds, merging either fails
// (and then nothing is written) or gives a JSON object holding every hook,
// which a second merge leaves byte for byte as it is.
func FuzzMergeHooks(f *testing.F) {
	f.Add([]byte(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"x"}]}]},"a":1}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"hooks":{"Stop":[{"matcher":"","hooks":[]}]}}`))
	f.Add([]byte(`{"a":{"b":[1,2,{"c":null}]},"a":2}`))
	f.Add([]byte(`{"hooks":{"SessionEnd":[{"hooks":[{"type":"command","command":"airlock hook claude session-end","timeout":5}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, added, updated, err := mergeHooks("settings.json", data, claudeHooks)
		if err != nil {
			return
		}
		if len(added) == 0 && len(updated) == 0 {
			if !bytes.Equal(out, data) {
				t.Fatal("nothing added or updated, yet the file changed")
			}
			return
		}
		var s struct {
			Hooks map[string][]struct {
				Hooks []struct{ Command string } `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("merged file is not JSON: %v\n%s", err, out)
		}
		for _, h := range claudeHooks {
			found := false
			for _, g := range s.Hooks[h.event] {
				for _, x := range g.Hooks {
					found = found || runsAirlock(x.Command, h.command)
				}
			}
			if !found {
				t.Fatalf("%s has no airlock hook after the merge:\n%s", h.event, out)
			}
		}
		again, added, updated, err := mergeHooks("settings.json", out, claudeHooks)
		if err != nil || len(added) != 0 || len(updated) != 0 || !bytes.Equal(again, out) {
			t.Fatalf("second merge: added %v, updated %v, err %v", added, updated, err)
		}
	})
}
