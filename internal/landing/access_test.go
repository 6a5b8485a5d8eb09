package landing

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/testbin"
)

func TestAccessKey(t *testing.T) {
	for key, want := range map[string]bool{
		"core.sshcommand":                      true,
		"ssh.variant":                          true,
		"http.extraheader":                     true,
		"http.https://github.com/.extraheader": true,
		"http.proxy":                           true,
		"credential.helper":                    true,
		"credential.https://host.username":     true,
		"remote.origin.proxy":                  true,
		"remote.origin.uploadpack":             true,
		// What the clone's own commands run, not a fetch.
		"core.hookspath":     false,
		"core.fsmonitor":     false,
		"filter.lfs.process": false,
		"include.path":       false,
		"user.signingkey":    false,
		// Resolved by git in the clone, then given without credentials.
		"remote.origin.url":        false,
		"remote.origin.pushurl":    false,
		"url.https://x/.insteadof": false,
		// The landing names its own refs; other remotes are not asked.
		"remote.origin.fetch":          false,
		"remote.origin.tagopt":         false,
		"remote.other.proxy":           false,
		"remote.my.origin.receivepack": false,
		"core.sshcommandx":             false,
		"credentialx.helper":           false,
	} {
		if got := accessKey(key, "origin"); got != want {
			t.Errorf("accessKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestRewrite(t *testing.T) {
	view := []configEntry{
		{key: "url.git@github.com:.insteadof", value: "https://github.com/"},
		{key: "url.https://mirror/o/.insteadof", value: "https://github.com/o/"},
		{key: "url.ssh://push/.pushinsteadof", value: "https://github.com/"},
	}
	for _, c := range []struct {
		in   string
		push bool
		want string
	}{
		{"https://github.com/x/r.git", false, "git@github.com:x/r.git"},
		{"https://github.com/o/r.git", false, "https://mirror/o/r.git"}, // the longest prefix
		{"https://github.com/o/r.git", true, "ssh://push/o/r.git"},      // pushInsteadOf first
		{"https://gitlab.com/o/r.git", true, "https://gitlab.com/o/r.git"},
	} {
		if got := rewrite(c.in, view, c.push); got != c.want {
			t.Errorf("rewrite(%q, push=%v) = %q, want %q", c.in, c.push, got, c.want)
		}
	}
}

func TestSplitCredentials(t *testing.T) {
	bare, host, user, pass, ok := splitCredentials("https://x-access-token:T0K%40N@h.example:8443/o/r.git")
	if !ok || bare != "https://h.example:8443/o/r.git" || host != "https://h.example:8443" || user != "x-access-token" || pass == nil || *pass != "T0K@N" {
		t.Errorf("user and password: %q %q %q %v %v", bare, host, user, pass, ok)
	}
	for raw, want := range map[string]string{"https://u:ghs^SECRET@h/r.git": "ghs^SECRET", "https://u:ghs%SECRET@h/r.git": "ghs%SECRET"} {
		// net/url refuses these; git sends them as written.
		if bare, _, _, pass, ok := splitCredentials(raw); !ok || bare != "https://h/r.git" || pass == nil || *pass != want {
			t.Errorf("splitCredentials(%q) = %q %v %v", raw, bare, pass, ok)
		}
	}
	if _, _, user, pass, ok := splitCredentials("https://TOKEN@h/r.git"); !ok || user != "TOKEN" || pass != nil {
		t.Errorf("a user alone: %q %v %v", user, pass, ok)
	}
	for _, u := range []string{"https://h/r.git", "ssh://git@h/r.git", "git@h:r.git", "/srv/r.git"} {
		if _, _, _, _, ok := splitCredentials(u); ok {
			t.Errorf("splitCredentials(%q) found credentials", u)
		}
	}
}

// The configuration the environment gives one command is read as the
// user's git reads it, its access settings kept and the rest named;
// airlock's own command-line settings (hooks off) are neither.
func TestReadUserConfigTakesTheEnvironmentsAccessSettings(t *testing.T) {
	testbin.Require(t, "git", "readUserConfig asks git for the configuration")
	dir := t.TempDir()
	if _, err := git.Run(t.Context(), "init", "-q", dir); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_PARAMETERS", "'alias.x'='!touch planted'")
	t.Setenv("GIT_CONFIG_COUNT", "2")
	t.Setenv("GIT_CONFIG_KEY_0", "http.extraHeader")
	t.Setenv("GIT_CONFIG_VALUE_0", "Authorization: Bearer T")
	t.Setenv("GIT_CONFIG_KEY_1", "url.https://elsewhere/.insteadOf")
	t.Setenv("GIT_CONFIG_VALUE_1", "https://here/")
	entries, dropped, err := readUserConfig(t.Context(), git.At(filepath.Join(dir, ".git")), "origin")
	if err != nil {
		t.Fatal(err)
	}
	var command []string
	for _, e := range entries {
		if e.scope == "command" {
			command = append(command, e.key+"="+e.value)
		}
	}
	if !slices.Equal(command, []string{"http.extraheader=Authorization: Bearer T"}) {
		t.Errorf("command-scope entries kept = %q, want the access setting alone", command)
	}
	slices.Sort(dropped)
	if !slices.Equal(dropped, []string{"alias.x", "url.https://elsewhere/.insteadof"}) {
		t.Errorf("dropped = %q", dropped)
	}
}
