package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/remoteurl"
	"github.com/airlockdev/airlock/internal/safefs"
)

// Scrubbed is what ScrubGit changed in a staged tree: paths relative to
// it, slash-separated.
type Scrubbed struct {
	Rewritten []string // rewritten without their credentials
	Removed   []string // credential files taken out of the staged copy
}

// Changed reports whether ScrubGit changed anything.
func (s Scrubbed) Changed() bool { return len(s.Rewritten)+len(s.Removed) > 0 }

// ScrubGit takes the credentials out of the staged copy of the base's
// repository (dir/.git, where a backend copied the base's .git), wherever
// git keeps them there:
//
//   - its configuration: .git/config, each config.worktree (a per-worktree
//     configuration, extensions.worktreeConfig), and each file that
//     include.path or includeIf.<condition>.path names inside .git (a CI
//     job writing its auth header apart). A user and password in a URL
//     (what `git clone https://user:TOKEN@host/...` leaves in
//     remote.origin.url, or a url.<base> section rewriting to one) and
//     every http.extraheader (the authorization header a CI checkout
//     writes) are dropped; other settings stay as they were, the file
//     rewritten, without its comments, only where it held a credential;
//   - a credential-store file inside .git that a `credential.helper store
//     --file=PATH` names: removed from the staged copy;
//   - reflogs (.git/logs, a linked worktree's .git/worktrees/*/logs) and
//     FETCH_HEAD: `git pull https://user:TOKEN@host/...` logs its command
//     line; the URL's credentials are dropped from each line. (.git is
//     never part of a change set, so the rewrite is no one's change; the
//     reflogs are kept, not dropped, since the agent's git reads them:
//     HEAD@{1}, git reflog.)
//
// The base's repository keeps them all; a landing reads them from there
// (internal/landing), and an agent working in the staged tree gets none.
// base is the base's directory: a store file named by an absolute path
// into the base's .git has its copy in the staged tree. A staged tree
// whose .git is not a directory (the worktree backend's gitfile, a linked
// worktree's or submodule's) shares the base's repository and copied
// nothing.
func ScrubGit(ctx context.Context, dir, base string) (Scrubbed, error) {
	var out Scrubbed
	gitDir := filepath.Join(dir, ".git")
	if fi, err := os.Lstat(gitDir); err != nil || !fi.IsDir() {
		return out, nil
	}
	rel := func(p string) string {
		r, _ := filepath.Rel(dir, p)
		return filepath.ToSlash(r)
	}
	// inside maps p, a path git would read, to the staged tree's copy
	// under .git: "" when it lies outside (the user's own files, which no
	// backend copied).
	inside := func(p string) string {
		p = filepath.Clean(p)
		for _, root := range []string{gitDir, filepath.Join(base, ".git")} {
			if r, err := filepath.Rel(root, p); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				return filepath.Join(gitDir, r)
			}
		}
		return ""
	}

	configs := []string{filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree")}
	more, _ := filepath.Glob(filepath.Join(gitDir, "worktrees", "*", "config.worktree"))
	configs = append(configs, more...)
	seen := map[string]bool{}
	var stores []string
	// git follows includes ten deep; a file seen once is scrubbed once.
	for depth := 0; len(configs) > 0 && depth <= 10; depth++ {
		var next []string
		for _, path := range configs {
			if seen[path] {
				continue
			}
			seen[path] = true
			sc, err := scrubConfigFile(ctx, path)
			if err != nil {
				return out, err
			}
			if sc.rewritten {
				out.Rewritten = append(out.Rewritten, rel(path))
			}
			for _, inc := range sc.includes {
				if strings.HasPrefix(inc, "~") {
					continue // the user's home: not copied
				}
				if !filepath.IsAbs(inc) {
					inc = filepath.Join(filepath.Dir(path), inc)
				}
				if p := inside(inc); p != "" {
					next = append(next, p)
				}
			}
			stores = append(stores, sc.stores...)
		}
		configs = next
	}

	for _, f := range stores {
		if strings.HasPrefix(f, "~") {
			continue
		}
		if !filepath.IsAbs(f) {
			// git runs a helper where it runs: the work tree's top.
			f = filepath.Join(dir, f)
		}
		p := inside(f)
		if p == "" {
			continue
		}
		if fi, err := os.Lstat(p); err != nil || fi.IsDir() {
			continue
		}
		if err := os.Remove(p); err != nil {
			return out, fmt.Errorf("remove the staged copy of the credential store %s: %w", p, err)
		}
		out.Removed = append(out.Removed, rel(p))
	}

	logs := []string{filepath.Join(gitDir, "logs"), filepath.Join(gitDir, "FETCH_HEAD")}
	more, _ = filepath.Glob(filepath.Join(gitDir, "worktrees", "*", "logs"))
	logs = append(logs, more...)
	for _, root := range logs {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			changed, err := scrubLog(p)
			if changed {
				out.Rewritten = append(out.Rewritten, rel(p))
			}
			return err
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// scrubLog drops the URL credentials from a reflog (or FETCH_HEAD) in
// place.
func scrubLog(path string) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	if !bytes.Contains(data, []byte("://")) || !bytes.Contains(data, []byte("@")) {
		return false, nil
	}
	text, changed := remoteurl.ScrubText(string(data))
	if !changed {
		return false, nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	if err := safefs.WriteFile(path, []byte(text), fi.Mode().Perm()); err != nil {
		return false, fmt.Errorf("write the staged reflog %s without its credentials: %w", path, err)
	}
	return true, nil
}

// configScrub is what scrubConfigFile did and found in one file.
type configScrub struct {
	rewritten bool
	includes  []string // include.path and includeIf.*.path, as written
	stores    []string // the --file of each credential.helper store
}

// scrubConfigFile rewrites one staged configuration file without its
// credentials (see ScrubGit), and lists the files it includes and the
// credential-store files its helpers name.
func scrubConfigFile(ctx context.Context, path string) (configScrub, error) {
	var sc configScrub
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return sc, nil
	}
	if err != nil {
		return sc, err
	}
	// Most configs hold none of these: no git to start on every open.
	data, err := os.ReadFile(path)
	if err != nil {
		return sc, err
	}
	lower := bytes.ToLower(data)
	if !bytes.Contains(data, []byte("@")) && !bytes.Contains(lower, []byte("extraheader")) && !bytes.Contains(lower, []byte("include")) && !bytes.Contains(lower, []byte("helper")) {
		return sc, nil
	}
	out, err := git.Run(ctx, "config", "--file", path, "--list", "--null")
	if err != nil {
		// Not a configuration git reads: nothing git would send.
		return sc, nil
	}
	type entry struct {
		section, sub, name, value string
		set                       bool // has a value (not a bare `name`, true)
	}
	var entries []entry
	changed := false
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		key, value, set := strings.Cut(rec, "\n")
		first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
		if first < 0 {
			continue
		}
		e := entry{section: key[:first], name: key[last+1:], value: value, set: set}
		if first < last {
			e.sub = key[first+1 : last]
		}
		switch {
		case e.section == "http" && e.name == "extraheader":
			changed = true
			continue
		case (e.section == "include" || e.section == "includeif") && e.name == "path" && set:
			sc.includes = append(sc.includes, value)
		case e.section == "credential" && e.name == "helper":
			if f := storeFile(value); f != "" {
				sc.stores = append(sc.stores, f)
			}
		}
		if s, ok := withoutCredentials(e.value); ok {
			e.value, changed = s, true
		}
		if e.section == "url" {
			if s, ok := withoutCredentials(e.sub); ok {
				e.sub, changed = s, true
			}
		}
		entries = append(entries, e)
	}
	if !changed {
		return sc, nil
	}
	var b strings.Builder
	b.WriteString("# airlock: the base's configuration without its credentials (URL passwords and tokens, http.extraheader)\n")
	header := ""
	for _, e := range entries {
		h := "[" + e.section + "]"
		if e.sub != "" {
			h = "[" + e.section + " " + quoteConfig(e.sub) + "]"
		}
		if h != header {
			b.WriteString(h + "\n")
			header = h
		}
		if !e.set {
			b.WriteString("\t" + e.name + "\n")
			continue
		}
		b.WriteString("\t" + e.name + " = " + quoteConfig(e.value) + "\n")
	}
	if err := safefs.WriteFile(path, []byte(b.String()), fi.Mode().Perm()); err != nil {
		return sc, fmt.Errorf("write the staged repository configuration %s without its credentials: %w", path, err)
	}
	sc.rewritten = true
	return sc, nil
}

// storeFile is the file a `credential.helper` of git's credential-store
// keeps its passwords in, when the helper names one (store --file=PATH,
// store --file PATH); "" otherwise (the default, ~/.git-credentials, is
// the user's, never copied).
func storeFile(helper string) string {
	f := strings.Fields(helper)
	if len(f) == 0 || (f[0] != "store" && f[0] != "git-credential-store" && !strings.HasSuffix(f[0], "/git-credential-store")) {
		return ""
	}
	for i, a := range f[1:] {
		if v, ok := strings.CutPrefix(a, "--file="); ok {
			return v
		}
		if a == "--file" && i+2 < len(f) {
			return f[i+2]
		}
	}
	return ""
}

// Remeasure brings m, the staged tree's manifest, up to what ScrubGit
// changed in dir, so that nothing later takes the scrub for the agent's:
// each rewritten file and its directory measured as they are now, each
// removed file dropped.
func (s Scrubbed) Remeasure(m *manifest.Manifest, dir string) error {
	dirs := map[string]bool{}
	for _, p := range s.Rewritten {
		dirs[path.Dir(p)] = true
		if err := remeasure(m, dir, p); err != nil {
			return err
		}
	}
	for _, p := range s.Removed {
		dirs[path.Dir(p)] = true
		if i, found := slices.BinarySearchFunc(m.Entries, p, func(e manifest.Entry, p string) int { return strings.Compare(e.Path, p) }); found {
			m.Entries = slices.Delete(m.Entries, i, i+1)
		}
	}
	for d := range dirs {
		if err := remeasure(m, dir, d); err != nil {
			return err
		}
	}
	return nil
}

// remeasure puts p's entry in m as p is now in dir, when m has one.
func remeasure(m *manifest.Manifest, dir, p string) error {
	e, ok := m.Lookup(p)
	if !ok {
		return nil
	}
	now, err := manifest.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		return err
	}
	now.Path = e.Path
	*e = now
	return nil
}

// withoutCredentials is s, an http(s) or ftp(s) URL, without its user
// information, when that held a password or a user other than ssh's
// conventional "git" (a token is often the user alone); any other URL
// (ssh://, scp-like user:pass@host:path) without its password, which git
// never sends but is a secret all the same. s is split as git splits it
// (internal/remoteurl): a password net/url cannot parse is one git sends.
func withoutCredentials(s string) (string, bool) {
	u, ok := remoteurl.Split(s)
	if !ok {
		return "", false
	}
	switch u.Scheme {
	case "http", "https", "ftp", "ftps":
		if u.Secret() {
			return u.Bare(), true
		}
	default:
		if _, set := u.RawPassword(); set {
			return u.WithUserinfo(u.RawUser()), true
		}
	}
	return "", false
}

// quoteConfig writes s as a quoted git configuration string.
func quoteConfig(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}
