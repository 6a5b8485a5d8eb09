package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/remoteurl"
	"github.com/airlockdev/airlock/internal/safefs"
)

// ScrubGitConfig takes the credentials out of the staged copy of the
// base's repository configuration (dir/.git/config, where a backend
// copied the base's .git): a user and password in a URL (what `git clone
// https://user:TOKEN@host/...` leaves in remote.origin.url, or a url.<base>
// section rewriting to one) and every http.extraheader (the authorization
// header a CI checkout writes). The base's repository keeps them; a
// landing reads them from there (internal/landing), and an agent working
// in the staged tree gets none. Other settings stay as they were; the
// file is rewritten, without its comments, only where it held a
// credential. It reports whether it rewrote the file. A staged tree whose
// .git is not a directory (the worktree backend's gitfile) shares the
// base's configuration and copied nothing.
func ScrubGitConfig(ctx context.Context, dir string) (bool, error) {
	path := filepath.Join(dir, ".git", "config")
	if fi, err := os.Lstat(filepath.Join(dir, ".git")); err != nil || !fi.IsDir() {
		return false, nil
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// Most configs hold neither: no git to start on every open.
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	if !bytes.Contains(data, []byte("@")) && !bytes.Contains(bytes.ToLower(data), []byte("extraheader")) {
		return false, nil
	}
	out, err := git.Run(ctx, "config", "--file", path, "--list", "--null")
	if err != nil {
		// Not a configuration git reads: nothing git would send.
		return false, nil
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
		if e.section == "http" && e.name == "extraheader" {
			changed = true
			continue
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
		return false, nil
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
		return false, fmt.Errorf("write the staged repository configuration %s without its credentials: %w", path, err)
	}
	return true, nil
}

// RemeasureGitConfig puts the staged .git/config's entry in m as it is
// now, after ScrubGitConfig rewrote it.
func RemeasureGitConfig(m *manifest.Manifest, dir string) error {
	e, ok := m.Lookup(".git/config")
	if !ok {
		return nil
	}
	now, err := manifest.Lstat(filepath.Join(dir, ".git", "config"))
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
