package landing

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/remoteurl"
)

// urlRemote is the name under which a landing's git knows a remote given
// as a URL: the URL reaches git as remote.<name>.url in the environment,
// never on its command line, where ps shows it to every user of the
// machine.
const urlRemote = "airlock-remote"

// pushRemote is the name under which a landing's git knows the remote's
// (first) push URL as a fetch URL: `git ls-remote` asks where the push
// went, after a push was refused.
const pushRemote = "airlock-push"

// batchSSH is the ssh a landing's git runs when the user named none: in
// batch mode, ssh fails where it would ask (a passphrase, an unknown host
// key) instead of waiting at a terminal that no one watches.
// GIT_TERMINAL_PROMPT=0 covers git's own prompts, not ssh's.
const batchSSH = "ssh -o BatchMode=yes"

// remoteKeys are the settings of the named remote a landing takes from
// the clone besides its URLs (which it resolves, see resolveAccess): how
// to talk to it. Its refspecs, tag and prune settings are left out: the
// landing names its own refs.
var remoteKeys = []string{"proxy", "proxyauthmethod", "uploadpack", "receivepack", "vcs"}

// accessKey reports whether a configuration key, as `git config --list`
// spells it (section and name lower case, subsection as written), says
// how git reaches and authenticates to a server: core.sshCommand and
// ssh.variant (a deploy key), every http.* setting (extraheader, which CI
// checkouts write, certificates, cookies, proxies, each possibly scoped
// to a URL), every credential.* setting (helpers, usernames), and the
// named remote's remoteKeys. URL rewriting (url.<base>.insteadOf) is
// applied when the URLs are resolved. Nothing else of the clone's
// configuration reaches the landing's git: its hooks, fsmonitor and
// filters are code that the clone's own commands run, not a fetch's.
func accessKey(key, remote string) bool {
	section, rest, _ := strings.Cut(key, ".")
	switch section {
	case "http", "credential":
		return true
	case "core":
		return rest == "sshcommand"
	case "ssh":
		return rest == "variant"
	case "remote":
		i := strings.LastIndexByte(rest, '.')
		if i < 0 || rest[:i] != remote {
			return false
		}
		for _, k := range remoteKeys {
			if rest[i+1:] == k {
				return true
			}
		}
	}
	return false
}

// configEntry is one entry of `git config --list --show-scope
// --show-origin`.
type configEntry struct {
	scope, origin, key, value string
}

// readConfig lists the configuration a git in r reads, includes followed
// (a conditional include matches r's own repository).
func readConfig(ctx context.Context, r git.Repo) ([]configEntry, error) {
	b, err := r.Run(ctx, "config", "--list", "--null", "--show-scope", "--show-origin", "--includes")
	if err != nil {
		return nil, err
	}
	f := strings.Split(string(b), "\x00")
	var out []configEntry
	for i := 0; i+2 < len(f); i += 3 {
		key, value, _ := strings.Cut(f[i+2], "\n")
		out = append(out, configEntry{scope: f[i], origin: f[i+1], key: key, value: value})
	}
	return out, nil
}

// readUserConfig is readConfig as the user's own git command in r would
// read it: with the configuration the environment gives one command
// (GIT_CONFIG_COUNT, GIT_CONFIG_PARAMETERS; scope "command"), which every
// other git airlock runs drops (internal/git environ.go). Of that, only
// the access settings are kept, the rest named in dropped: a CI job's
// auth header is how its `git fetch` authenticates, but a one-command
// core.worktree or alias is none of the landing's business.
func readUserConfig(ctx context.Context, r git.Repo, remote string) (entries []configEntry, dropped []string, err error) {
	// airlock's git gives itself settings on its command line (hooks
	// off, internal/git), in the same scope: those are not the
	// environment's, nor the user's.
	own, err := readConfig(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	all := own
	if env := git.CommandConfigEnv(); len(env) > 0 {
		if all, err = readConfig(ctx, r.WithEnv(env...)); err != nil {
			return nil, nil, err
		}
	}
	mine := map[configEntry]int{}
	for _, e := range own {
		if e.scope == "command" {
			mine[e]++
		}
	}
	for _, e := range all {
		if e.scope == "command" {
			if mine[e] > 0 {
				mine[e]--
				continue
			}
			if !accessKey(e.key, remote) {
				dropped = append(dropped, e.key)
				continue
			}
		}
		entries = append(entries, e)
	}
	return entries, dropped, nil
}

// access is how a landing's git reaches the remote: the name on its
// command line, and, in its environment, the remote's URLs (credentials
// taken out of them) and what the clone's configuration says about
// reaching and authenticating to servers.
type access struct {
	name string
	env  []string
	cwd  string   // the clone's top, where `git fetch` in the clone runs
	urls []string // the fetch and push URLs as resolved, for masking
	// batch is set when airlock chose ssh's batch mode (the user named
	// no ssh command of their own).
	batch bool
	// dropped are the keys the environment's one-command configuration
	// set that the landing does not pass on (not access settings): a
	// failure names them, since `git fetch` in the clone reads them.
	dropped []string
}

// resolveAccess works out how the private repository at dir reaches
// remote (a remote of the clone holding from, else a URL) exactly as
// `git fetch remote` and `git push remote` in the clone would:
//
//   - the fetch and push URLs are the clone's git's own answer (`git
//     remote get-url`, url.<base>.insteadOf and pushInsteadOf applied),
//     or, for a URL, that URL rewritten by the same settings (rewrite).
//     The landing's git gets them as remote.<name>.url and pushurl, the
//     rewriting done: a rewrite may add a token (CI's
//     url.<https://TOKEN@host/>.insteadOf), which must not reach argv;
//   - a user and password in a URL (https://user:TOKEN@host/...) are
//     taken out of it and handed to git by a credential helper that reads
//     them from its environment, as the only helper for that host, since
//     git prefers a URL's credentials to any helper's; a user alone
//     becomes credential.<host>.username. git would otherwise put the URL
//     on its remote helper's command line;
//   - the access settings (accessKey) the clone's git reads and the
//     private repository's does not (the clone's .git/config and what it
//     includes, a global include conditional on the clone's path) follow,
//     in the order git reads them.
//
// All of it reaches git through GIT_CONFIG_COUNT: never written into
// airlock's state, never on a command line.
func resolveAccess(ctx context.Context, dir, from, remote string) (*access, error) {
	a := &access{name: remote}
	r := git.At(dir)
	if from != "" {
		if top, err := git.In(from).Run(ctx, "rev-parse", "--show-toplevel"); err == nil {
			a.cwd = strings.TrimSpace(string(top))
			r = git.In(from)
		}
	}
	var kv []string
	var view []configEntry
	if a.cwd != "" {
		clone, dropped, err := readUserConfig(ctx, git.In(from), remote)
		if err != nil {
			return nil, fmt.Errorf("read the git configuration of %s: %w", from, err)
		}
		private, err := readConfig(ctx, git.At(dir))
		if err != nil {
			return nil, fmt.Errorf("read the git configuration of the landing's repository %s: %w", dir, err)
		}
		seen := map[configEntry]int{}
		for _, e := range private {
			seen[e]++
		}
		for _, e := range clone {
			if !accessKey(e.key, remote) {
				continue
			}
			if seen[e] > 0 {
				seen[e]--
				continue
			}
			kv = append(kv, e.key, e.value)
		}
		view, a.dropped = clone, dropped
	} else {
		var err error
		if view, a.dropped, err = readUserConfig(ctx, git.At(dir), remote); err != nil {
			return nil, fmt.Errorf("read the git configuration of the landing's repository %s: %w", dir, err)
		}
		// The landing's git reads the rest itself; not what the
		// environment gave for one command (access settings only, see
		// readUserConfig).
		for _, e := range view {
			if e.scope == "command" {
				kv = append(kv, e.key, e.value)
			}
		}
	}

	if fetch, err := r.Run(ctx, "remote", "get-url", "--", remote); err == nil {
		push, err := r.Run(ctx, "remote", "get-url", "--push", "--all", "--", remote)
		if err != nil {
			return nil, fmt.Errorf("read the push URL of remote %s: %s", remote, gitSaid(err))
		}
		a.urls = append([]string{strings.TrimSpace(string(fetch))}, strings.Fields(string(push))...)
	} else {
		// A URL: rewritten as git rewrites one given on its command line
		// (`git remote get-url` knows only remotes of the repository).
		a.name = urlRemote
		u := remote
		if localRelative(u) {
			// git resolves a path against where it runs, which is the
			// clone's top; the user meant where they ran airlock.
			abs, err := filepath.Abs(u)
			if err != nil {
				return nil, fmt.Errorf("resolve the remote path %s: %w", u, err)
			}
			u = abs
		}
		a.urls = []string{rewrite(u, view, false), rewrite(u, view, true)}
	}

	creds := 0
	for i, u := range a.urls {
		key := "remote." + a.name + ".pushurl"
		if i == 0 {
			key = "remote." + a.name + ".url"
		}
		bare, host, user, pass, ok := splitCredentials(u)
		if !ok {
			bare = u
		}
		// Rewritten already: a URL rewritten to itself is the longest
		// match there can be, so a global insteadOf (which the
		// landing's git reads too) cannot rewrite it again, putting
		// back a token just taken out.
		kv = append(kv, key, bare, "url."+bare+".insteadOf", bare)
		if i == 1 {
			kv = append(kv, "remote."+pushRemote+".url", bare)
		}
		if !ok {
			continue
		}
		switch {
		case pass == nil:
			kv = append(kv, "credential."+host+".username", user)
		default:
			n := strconv.Itoa(creds)
			creds++
			a.env = append(a.env, "AIRLOCK_LANDING_USERNAME_"+n+"="+user, "AIRLOCK_LANDING_PASSWORD_"+n+"="+*pass)
			kv = append(kv, "credential."+host+".helper", "",
				"credential."+host+".helper", `!f() { test "$1" = get && printf 'username=%s\npassword=%s\n' "$AIRLOCK_LANDING_USERNAME_`+n+`" "$AIRLOCK_LANDING_PASSWORD_`+n+`"; }; f`)
		}
	}

	ssh := ""
	for _, e := range view {
		if e.key == "core.sshcommand" {
			ssh = e.value
		}
	}
	// git's order: GIT_SSH_COMMAND, then core.sshCommand, then GIT_SSH.
	// The ssh command itself, with the bounds, is set per call (remote).
	if os.Getenv("GIT_SSH_COMMAND") == "" && ssh == "" && os.Getenv("GIT_SSH") == "" {
		a.batch = true
	}
	// No askpass program answers git's prompts (GIT_ASKPASS is set
	// empty for every git airlock runs, internal/git): the clone's
	// core.askPass is overridden too, should git ever read it first.
	kv = append(kv, "core.askpass", "")
	a.env = append(a.env, git.ConfigEnv(kv...)...)
	return a, nil
}

// rewrite applies url.<base>.insteadOf (and, for a push, pushInsteadOf
// first) to u as git does: the longest matching prefix wins.
func rewrite(u string, view []configEntry, push bool) string {
	best := func(suffix string) (string, int) {
		base, n := "", -1
		for _, e := range view {
			if !strings.HasPrefix(e.key, "url.") || !strings.HasSuffix(e.key, suffix) || !strings.HasPrefix(u, e.value) {
				continue
			}
			if len(e.value) > n {
				base, n = strings.TrimSuffix(strings.TrimPrefix(e.key, "url."), suffix), len(e.value)
			}
		}
		return base, n
	}
	if push {
		if base, n := best(".pushinsteadof"); n >= 0 {
			return base + u[n:]
		}
	}
	if base, n := best(".insteadof"); n >= 0 {
		return base + u[n:]
	}
	return u
}

// splitCredentials takes the user and password out of an http(s) URL: ok
// when it held any, with the URL without them and the credential context
// they are for (scheme://host[:port], as credential.<url>.* matches it).
// The URL is split as git splits it (internal/remoteurl), not by net/url,
// which refuses passwords git takes.
func splitCredentials(raw string) (bare, host, user string, pass *string, ok bool) {
	u, found := remoteurl.Split(raw)
	if !found || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", "", nil, false
	}
	if p, set := u.Password(); set {
		pass = &p
	}
	return u.Bare(), u.Host(), u.User(), pass, true
}

// localRelative reports whether a URL git accepts is a relative path
// (not scheme://, not scp-like host:path, whose colon comes before any
// slash).
func localRelative(u string) bool {
	if strings.Contains(u, "://") || filepath.IsAbs(u) {
		return false
	}
	colon, slash := strings.IndexByte(u, ':'), strings.IndexByte(u, '/')
	return colon < 0 || (slash >= 0 && slash < colon)
}

// sshAdvice says what to do about an ssh failure git passed on, or "".
func (a *access) sshAdvice(msg string) string {
	how := ""
	if a.batch {
		how = " (airlock runs ssh in batch mode, so that ssh never waits at a prompt; GIT_SSH_COMMAND or core.sshCommand, when set, run instead)"
	}
	switch {
	case strings.Contains(msg, "Host key verification failed"):
		return "ssh does not know the server's host key" + how + ": check its fingerprint and add it to ~/.ssh/known_hosts (ssh-keyscan -p PORT HOST >> ~/.ssh/known_hosts), or connect once with ssh yourself"
	case strings.Contains(msg, "Permission denied (publickey"):
		return "ssh has no key it can use without asking" + how + ": load your key into ssh-agent (ssh-add KEY asks for its passphrase once), or give the clone a deploy key (git config core.sshCommand 'ssh -i KEY -o IdentitiesOnly=yes')"
	}
	return ""
}
