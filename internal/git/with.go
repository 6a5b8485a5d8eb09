package git

import (
	"slices"
	"strconv"
)

// WithEnv is r with kv (NAME=value) set after the hardened environment.
// It is how a caller hands git what must not be on its command line, which
// any user can read in ps: a remote's URL with a token in it, an
// authorization header (git's GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n and
// GIT_CONFIG_VALUE_n; a process's environment is readable by its owner
// alone).
func (r Repo) WithEnv(kv ...string) Repo {
	r.env = append(slices.Clone(r.env), kv...)
	return r
}

// WithCwd is r started in dir, so that the relative paths configuration
// names (a key file in core.sshCommand, a credential helper's file) mean
// what they mean to a git run there.
func (r Repo) WithCwd(dir string) Repo {
	r.cwd = dir
	return r
}

// ConfigEnv is the environment that gives git the configuration entries
// kv (key, value, key, value...) as `git -c` would, in order, without
// putting them on the command line.
func ConfigEnv(kv ...string) []string {
	n := len(kv) / 2
	out := make([]string, 0, 2*n+1)
	out = append(out, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
	for i := 0; i < n; i++ {
		out = append(out, "GIT_CONFIG_KEY_"+strconv.Itoa(i)+"="+kv[2*i], "GIT_CONFIG_VALUE_"+strconv.Itoa(i)+"="+kv[2*i+1])
	}
	return out
}
