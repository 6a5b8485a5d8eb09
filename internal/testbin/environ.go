package testbin

import (
	"os"
	"strings"
)

// GitIdentity is the git environment every process a test starts runs
// with: commits get a fixed author, and no system or global git config can
// change what git does.
var GitIdentity = []string{
	"GIT_AUTHOR_NAME=Airlock Test", "GIT_AUTHOR_EMAIL=test@airlock.invalid",
	"GIT_COMMITTER_NAME=Airlock Test", "GIT_COMMITTER_EMAIL=test@airlock.invalid",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
}

// Environ is the environment of a process a test starts: the test's own,
// less anything that could point airlock, git, an agent or a browser
// elsewhere or arm a fault point (AIRLOCK_*, GIT_*, CLAUDE_*, HOME,
// XDG_STATE_HOME, PWD, DISPLAY, WAYLAND_DISPLAY; AIRLOCK_NO_WATCH stays, so
// that the whole suite can run walked), with the state root and
// home given, GitIdentity, and then extra (a later variable wins over an
// earlier one of the same name, as os/exec keeps the last).
func Environ(state, home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "AIRLOCK_NO_WATCH":
			// The switch that runs the whole suite with every run's
			// change set walked, not watched (docs/testing.md).
		case strings.HasPrefix(k, "AIRLOCK_"), strings.HasPrefix(k, "GIT_"), strings.HasPrefix(k, "CLAUDE_"):
			continue
		case k == "HOME", k == "XDG_STATE_HOME", k == "PWD", k == "DISPLAY", k == "WAYLAND_DISPLAY":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "AIRLOCK_STATE_DIR="+state, "HOME="+home)
	env = append(env, GitIdentity...)
	return append(env, extra...)
}
