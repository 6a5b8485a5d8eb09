package git

import (
	"os"
	"slices"
	"strings"
)

// relocating are the variables that make git work on another repository,
// index, work tree or object store than the one the command line names, or
// change how git finds it. A git hook, an editor or a shell that started
// airlock may have set them for its own repository; airlock names its
// repository itself, and the answer to "which repository holds this base"
// must not depend on where airlock was started from (for gitbase, a stray
// GIT_DIR would supply a merge ancestor from another history).
var relocating = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_PREFIX",
	"GIT_INDEX_FILE", "GIT_INDEX_VERSION",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH",
	"GIT_NAMESPACE",
	// Discovery limits: set for a shell's prompt, they would make the
	// base look like no repository to one of airlock's callers and like
	// one to another.
	"GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
	// What objects read as: replace refs and grafts are the repository's
	// own business, not the environment's.
	"GIT_REPLACE_REF_BASE", "GIT_NO_REPLACE_OBJECTS", "GIT_GRAFT_FILE", "GIT_SHALLOW_FILE",
	// Configuration a parent git passes to its children for one command
	// (`git -c core.worktree=... commit` running a hook that runs airlock):
	// meant for that command, not for airlock's. GIT_CONFIG is the legacy
	// name of a file only git-config reads. The standing configuration
	// stays: GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM and GIT_CONFIG_NOSYSTEM
	// say where the user keeps it.
	"GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
}

// relocatingPrefixes are the numbered companions of GIT_CONFIG_COUNT.
var relocatingPrefixes = []string{"GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"}

// set are appended last, so that they win over any inherited value.
var set = []string{
	// No credential prompt: airlock runs under hooks and agents with no
	// one at a terminal. Where it names a remote (`land --remote`), git's
	// own non-interactive authentication (ssh keys and agents, credential
	// helpers) still works; a prompt would only hang.
	"GIT_TERMINAL_PROMPT=0",
	// No askpass program either: git asks GIT_ASKPASS, core.askPass and
	// SSH_ASKPASS before the terminal (prompt.c), and a desktop's askpass
	// opens a window that waits for someone to answer. git stops at a
	// GIT_ASKPASS that is set, and runs none when it is empty; the
	// landing sets core.askPass empty too (internal/landing). ssh's own
	// use of SSH_ASKPASS is left to the user's ssh command.
	"GIT_ASKPASS=",
	// A path is a file name, never a glob or pathspec magic.
	"GIT_LITERAL_PATHSPECS=1",
	// git's messages in English: callers match them ("not a git
	// repository"), and airlock's own messages are English. Paths are
	// bytes to git whatever the locale.
	"LC_ALL=C",
}

// environ returns env as airlock's git sees it: the variables that would
// relocate the repository dropped, and those that harden git set. Kept on
// purpose: PATH and GIT_EXEC_PATH (which git installation runs), HOME and
// XDG_CONFIG_HOME (where the user's configuration lives), GIT_TRACE* (to
// debug airlock's git calls), and identity and transport variables that the
// commands airlock runs never use.
func environ(env []string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(relocating, k) || slices.ContainsFunc(relocatingPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			continue
		}
		if slices.ContainsFunc(set, func(s string) bool { return strings.HasPrefix(s, k+"=") }) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, set...)
}

// CommandConfigEnv is the configuration the environment gives git for one
// command (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT and its numbered
// GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n), which environ drops from every
// git airlock runs. It is for a caller that must read the configuration
// as the user's own git command would (a landing reads how `git fetch`
// in the clone authenticates, and a CI job may pass its auth header this
// way); that caller takes from it what it needs and passes it on itself.
func CommandConfigEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GIT_CONFIG_PARAMETERS" || k == "GIT_CONFIG_COUNT" || slices.ContainsFunc(relocatingPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			out = append(out, kv)
		}
	}
	return out
}
