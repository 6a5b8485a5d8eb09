package airlock

import (
	"strings"
	"testing"
)

func TestDoctor(t *testing.T) {
	st, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checks := st.Doctor(t.TempDir())
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
		if c.Reason == "" {
			t.Errorf("%s: no reason given", c.Name)
		}
	}
	if got := strings.Join(names, ","); got != "namespaces,contain,terminal,overlay,overlay-rootless,reflink,worktree,auto,recycle,watch,timestamps-state,timestamps-base,git" {
		t.Fatalf("checks %s", got)
	}
	for _, c := range checks {
		if c.Name == "auto" && !strings.Contains(c.Reason, "picks copy") && !strings.Contains(c.Reason, "picks reflink") {
			t.Errorf("auto: %q names no backend", c.Reason)
		}
	}
}
