package landing

import (
	"context"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

func TestRedact(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"origin", "origin"},
		{"git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"https://user:secret@host/r.git", "https://user:xxxxx@host/r.git"},
		{"https://TOKEN@host/r.git", "https://xxxxx@host/r.git"},
		{"ssh://git@host/r.git", "ssh://git@host/r.git"},
		{"https://host/r.git?token=abc", "https://host/r.git?xxxxx"},
		// What net/url cannot parse, and git sends.
		{"https://u:bad^SECRET@host/r.git", "https://u:xxxxx@host/r.git"},
		{"https://u:bad%SECRET@host/r.git", "https://u:xxxxx@host/r.git"},
		{"https://bad^TOKEN@host/r.git?t=a^b#f", "https://xxxxx@host/r.git?xxxxx#f"},
		{"u:p^w@host:r.git", "u:xxxxx@host:r.git"},
	} {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	l := &Repo{access: &access{urls: []string{"https://user:secret@host/r.git", "https://host/r.git?token=abc", "https://u:p%40^ss@h/"}}}
	if got := l.mask("fatal: secret and abc and token=abc, p%40^ss p@^ss"); strings.Contains(got, "secret") || strings.Contains(got, "abc") || strings.Contains(got, "ss") {
		t.Errorf("mask left a secret: %q", got)
	}
}

func TestBranchRef(t *testing.T) {
	testbin.Require(t, "git", "BranchRef asks git check-ref-format")
	ctx := context.Background()
	for _, tt := range []struct{ in, want string }{
		{"main", "refs/heads/main"},
		{"refs/heads/team/land", "refs/heads/team/land"},
	} {
		if got, err := BranchRef(ctx, tt.in); err != nil || got != tt.want {
			t.Errorf("BranchRef(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "-x", "a..b", "a b"} {
		if _, err := BranchRef(ctx, bad); err == nil {
			t.Errorf("BranchRef(%q) accepted a bad branch", bad)
		}
	}
}
