package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/selector"
)

// Project is the project a base belongs to and the config that governs
// it. A transaction may be opened over a subdirectory of a project
// (`--workdir proj/src`); the project's rules still hold there: its
// protect and exclude selectors, and the default protected selectors, are
// matched against paths relative to the project root, and its validate
// runs on a candidate of the whole project.
//
// The config that governs a base is the nearest .airlock.toml at or above
// it. The search goes up from the base and stops at the first directory
// that holds one (the project root), else at the enclosing git
// repository's top level (a directory holding .git), where the base's own
// repository ends: a config above the repository belongs to something
// else. It never reaches the user's home directory or the filesystem root,
// which are never bases and so never projects. A base with no config up to
// there is its own project root, with the default config.
type Project struct {
	Root  string         // the project root: the config's directory, or the base
	Under string         // the base relative to Root, slash-separated; "" when the base is the root
	Cfg   *config.Config // the governing config (config.Default() when none)
}

// Find finds the project that governs base (an absolute,
// symlink-free directory).
func Find(base string) (*Project, error) {
	stop := map[string]bool{"/": true}
	if home, err := os.UserHomeDir(); err == nil {
		if h, err := filepath.EvalSymlinks(home); err == nil {
			stop[h] = true
		}
	}
	for dir := base; ; {
		cfgPath := filepath.Join(dir, config.FileName)
		if _, err := os.Lstat(cfgPath); err == nil {
			if dir != base {
				if err := checkOwnConfig(cfgPath, base); err != nil {
					return nil, err
				}
			}
			cfg, err := config.Load(dir)
			if err != nil {
				return nil, err
			}
			return New(dir, base, cfg)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("project config %s: %w", cfgPath, unwrapPathErr(err))
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			break // the repository's top level: its config would be here
		}
		parent := filepath.Dir(dir)
		if parent == dir || stop[parent] {
			break
		}
		dir = parent
	}
	return New(base, base, config.Default())
}

// New is the project rooted at root, governed by cfg, that base lies in.
func New(root, base string, cfg *config.Config) (*Project, error) {
	rel, err := filepath.Rel(root, base)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("base %s is not inside project %s", base, root)
	}
	if rel == "." {
		rel = ""
	}
	return &Project{Root: root, Under: filepath.ToSlash(rel), Cfg: cfg}, nil
}

// checkOwnConfig refuses a config above the base that is not the user's
// own (or root's): its validate would run as the user at every commit, so
// another user's file, planted in a shared directory such as /tmp, must
// not govern the user's transactions.
func checkOwnConfig(cfgPath, base string) error {
	fi, err := os.Lstat(cfgPath)
	if err != nil {
		return fmt.Errorf("project config %s: %w", cfgPath, unwrapPathErr(err))
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := int(st.Uid); uid != os.Getuid() && uid != 0 {
		return fmt.Errorf("project config %s (which governs %s) belongs to user %d, not to you; airlock will not run another user's rules: remove it, or put your own .airlock.toml at %s", cfgPath, base, uid, base)
	}
	return nil
}

// Under turns a base-relative path into a path relative to the
// project root.
func Under(under, rel string) string {
	if under == "" {
		return rel
	}
	if rel == "" || rel == "." {
		return under
	}
	return path.Join(under, rel)
}

// Selector matches base-relative paths against selectors written
// relative to a project root the base lies beneath (see Project).
type Selector struct {
	set      *selector.Set
	under    string
	patterns []string
}

// NewSelector compiles patterns, written relative to the project root,
// for a base at under beneath it.
func NewSelector(patterns []string, under string) (*Selector, error) {
	set, err := selector.New(patterns)
	if err != nil {
		return nil, err
	}
	return &Selector{set: set, under: under, patterns: patterns}, nil
}

// MatchLink reports whether a symlink the change set puts at rel would
// give a protected path content from elsewhere: the link itself is
// protected as a file or as the directory it stands for (`.github/workflows`
// linked to another directory), or a selector names a path beneath it by a
// literal directory prefix (`.vscode/tasks.json` beneath a link `.vscode`).
// A path beneath a link would otherwise be reached through the link and
// never appear in a change set, so no selector would ever see it.
func (p *Selector) MatchLink(rel string) bool {
	if p.Match(rel, false) || p.Match(rel, true) {
		return true
	}
	in := Under(p.under, rel) + "/"
	for _, pat := range p.patterns {
		if strings.HasPrefix(pat, "!") || strings.HasPrefix(pat, "#") {
			continue
		}
		pat = strings.TrimPrefix(strings.TrimSpace(pat), "/")
		if strings.HasPrefix(pat, in) {
			return true
		}
	}
	return false
}

// Match is selector.Match of the path relative to the project root: a
// directory above the base that a selector selects selects the whole base.
func (p *Selector) Match(rel string, isDir bool) bool {
	return p.set.Match(Under(p.under, rel), isDir)
}

// MatchSelf is the Skip of a walk of the base: what selector.MatchSelf
// says of the path itself, and, for a base beneath the project root, of
// the directories between the root and the base, which the walk never
// visits.
func (p *Selector) MatchSelf(rel string, isDir bool) bool {
	if p.under == "" {
		return p.set.MatchSelf(rel, isDir)
	}
	return p.set.Match(Under(p.under, rel), isDir)
}

// Len is the number of selectors.
func (p *Selector) Len() int { return p.set.Len() }

// unwrapPathErr is the cause of a path error, whose path the message
// names already.
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
