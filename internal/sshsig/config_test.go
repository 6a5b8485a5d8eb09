package sshsig

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

func gitConfig(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "config"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git config %v: %v\n%s", args, err, out)
	}
}

// ConfigOf reads what git reads: only gpg.format=ssh signs; a key path's ~
// is the home directory, a key:: literal stays as it is, the last of a key
// set twice wins; the repository's config over the user's.
func TestConfigOf(t *testing.T) {
	testbin.Require(t, "git", "ConfigOf reads the configuration git reads; .ci/run installs git")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	ctx := t.Context()

	c, err := ConfigOf(ctx, repo)
	if err != nil || c.Key != "" || c.Program != "ssh-keygen" || c.AllowedSigners != "" {
		t.Fatalf("nothing configured: %+v, %v", c, err)
	}
	gitConfig(t, repo, "user.signingkey", "~/.ssh/id_ed25519")
	if c, _ := ConfigOf(ctx, repo); c.Key != "" {
		t.Errorf("user.signingkey without gpg.format=ssh (git's default is openpgp): key %q, want none", c.Key)
	}
	gitConfig(t, repo, "gpg.format", "ssh")
	gitConfig(t, repo, "gpg.ssh.program", "/opt/ssh-keygen")
	gitConfig(t, "/", "--global", "gpg.ssh.allowedSignersFile", "~/allowed")
	c, err = ConfigOf(ctx, repo)
	if err != nil || c.Key != filepath.Join(home, ".ssh/id_ed25519") || c.Program != "/opt/ssh-keygen" || c.AllowedSigners != filepath.Join(home, "allowed") {
		t.Errorf("a key file: %+v, %v", c, err)
	}
	gitConfig(t, repo, "--add", "user.signingkey", "key::ssh-ed25519 AAAAC3 me")
	if c, _ := ConfigOf(ctx, repo); c.Key != "key::ssh-ed25519 AAAAC3 me" || !isLiteral(c.Key) {
		t.Errorf("a key:: literal set last: key %q", c.Key)
	}
	if c, err := ConfigOf(ctx, filepath.Join(repo, "gone", "deeper")); err != nil || c.Key != "key::ssh-ed25519 AAAAC3 me" {
		t.Errorf("a base gone from the repository (a discard after it was deleted): %+v, %v; want the repository's config", c, err)
	}
	outside := t.TempDir()
	if c, err := ConfigOf(ctx, outside); err != nil || c.Key != "" || c.AllowedSigners != filepath.Join(home, "allowed") {
		t.Errorf("outside a repository, the user's config: %+v, %v", c, err)
	}
}
