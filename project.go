package airlock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/selector"
)

// project is the project a base belongs to and the config that governs
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
type project struct {
	Root  string         // the project root: the config's directory, or the base
	Under string         // the base relative to Root, slash-separated; "" when the base is the root
	Cfg   *config.Config // the governing config (config.Default() when none)
}

// findProject finds the project that governs base (an absolute,
// symlink-free directory).
func findProject(base string) (*project, error) {
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
			return newProject(dir, base, cfg)
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
	return newProject(base, base, config.Default())
}

func newProject(root, base string, cfg *config.Config) (*project, error) {
	rel, err := filepath.Rel(root, base)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, fmt.Errorf("base %s is not inside project %s", base, root)
	}
	if rel == "." {
		rel = ""
	}
	return &project{Root: root, Under: filepath.ToSlash(rel), Cfg: cfg}, nil
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

// underProject turns a base-relative path into a path relative to the
// project root.
func underProject(under, rel string) string {
	if under == "" {
		return rel
	}
	if rel == "" || rel == "." {
		return under
	}
	return path.Join(under, rel)
}

// projectSelector matches base-relative paths against selectors written
// relative to a project root the base lies beneath (see project).
type projectSelector struct {
	set      *selector.Set
	under    string
	patterns []string
}

func newProjectSelector(patterns []string, under string) (*projectSelector, error) {
	set, err := selector.New(patterns)
	if err != nil {
		return nil, err
	}
	return &projectSelector{set: set, under: under, patterns: patterns}, nil
}

// MatchLink reports whether a symlink the change set puts at rel would
// give a protected path content from elsewhere: the link itself is
// protected as a file or as the directory it stands for (`.github/workflows`
// linked to another directory), or a selector names a path beneath it by a
// literal directory prefix (`.vscode/tasks.json` beneath a link `.vscode`).
// A path beneath a link would otherwise be reached through the link and
// never appear in a change set, so no selector would ever see it.
func (p *projectSelector) MatchLink(rel string) bool {
	if p.Match(rel, false) || p.Match(rel, true) {
		return true
	}
	in := underProject(p.under, rel) + "/"
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
func (p *projectSelector) Match(rel string, isDir bool) bool {
	return p.set.Match(underProject(p.under, rel), isDir)
}

// MatchSelf is the Skip of a walk of the base: what selector.MatchSelf
// says of the path itself, and, for a base beneath the project root, of
// the directories between the root and the base, which the walk never
// visits.
func (p *projectSelector) MatchSelf(rel string, isDir bool) bool {
	if p.under == "" {
		return p.set.MatchSelf(rel, isDir)
	}
	return p.set.Match(underProject(p.under, rel), isDir)
}

// Len is the number of selectors.
func (p *projectSelector) Len() int { return p.set.Len() }

// protectOf is the protected selectors a config and the open's options
// give.
func protectOf(cfg *config.Config, extra []string, noDefault bool) []string {
	prot := slices.Concat(cfg.Protect, extra)
	if !noDefault && cfg.DefaultProtect {
		prot = append(slices.Clone(DefaultProtect), prot...)
	}
	return prot
}

// projectNow is the project that governs the base now, read from the base
// (see project): the gate a commit is held to. The transaction's open
// record says what governed it at open, but a process of the same user can
// rewrite that record, so the commit does not rely on it alone: it takes
// the union of the recorded and the current protected selectors, and runs
// the project's validate as the base's config says now. A change the
// transaction itself makes to the config is not in the base yet, so it
// never lowers its own gate.
//
// A check made from inside `airlock run`'s same-path view sees the staged
// workspace at the base's path, where the config is the agent's: it uses
// the record (the commit re-reads the base).
//
// A config that no longer parses (a person broke it since open) does not
// block the commit: the recorded gate stands alone then.
func (t *Tx) projectNow(w *workspace) (*project, error) {
	recorded := func() *project {
		cfg := config.Default()
		cfg.Validate = t.rec.Validate
		root := t.Base()
		if t.rec.Project != "" {
			root = string(t.rec.Project)
		}
		return &project{Root: root, Under: string(t.rec.Under), Cfg: cfg}
	}
	if w.base != t.Base() || w.limited {
		return recorded(), nil
	}
	p, err := findProject(t.Base())
	var ce *config.Error
	if errors.As(err, &ce) {
		return recorded(), nil
	}
	return p, err
}

// projectRead is the path through which the project root is read: its own
// path, or, where the base is read through another path (see baseRead),
// the same path less the base's place in the project.
func (t *Tx) projectRead(w *workspace, gate *project) string {
	if b := w.base; b != t.Base() {
		if p, ok := strings.CutSuffix(b, "/"+gate.Under); ok {
			return p
		}
	}
	return gate.Root
}

// skipState skips, in a copy of the project root, the state root when it
// lies inside the project (beside the base): the candidate is built inside
// the state root, and the state is no part of the project.
func (t *Tx) skipState(root string) func(string, bool) bool {
	rel, err := filepath.Rel(root, resolveMissing(t.store.Dir()))
	if err != nil || !filepath.IsLocal(rel) {
		return func(string, bool) bool { return false }
	}
	rel = filepath.ToSlash(rel)
	return func(p string, _ bool) bool { return p == rel }
}

// validateEnv is the environment the project's validator runs with: not the committing process's whole environment, which an agent
// that runs `airlock commit` controls (MAKEFLAGS=n turns `make test` into
// a dry run, GOFLAGS=-run=^$ runs no Go test), but the variables a shell
// and its tools need to find themselves (validateBaseEnv), the locale
// (LC_*), and the variables the project config lists in validate_env.
func validateEnv(environ []string, allow []string) []string {
	keep := map[string]bool{}
	for _, k := range validateBaseEnv {
		keep[k] = true
	}
	for _, k := range allow {
		keep[k] = true
	}
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && (keep[k] || strings.HasPrefix(k, "LC_")) {
			out = append(out, kv)
		}
	}
	// Where programs are found, and the home their configuration is read
	// from, are the committer's to choose only if the project says so:
	// otherwise a PATH with a fake `make` or `sh` first, or a HOME with a
	// ~/.npmrc or ~/.gitconfig of the committer's making, would decide the
	// validator's verdict.
	set := map[string]bool{}
	for _, k := range allow {
		set[k] = true
	}
	if !set["PATH"] {
		out = append(out, "PATH="+validatePath)
	}
	if !set["HOME"] {
		if u, err := user.Current(); err == nil && u.HomeDir != "" {
			out = append(out, "HOME="+u.HomeDir)
		}
	}
	if !set["SHELL"] {
		out = append(out, "SHELL=/bin/sh")
	}
	return out
}

// validatePath is the PATH of the project's validator unless its config
// lists PATH in validate_env: the system's directories, the Go toolchain's
// usual place, nothing the committer chose.
const validatePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin:/opt/homebrew/bin"

// validateBaseEnv are the variables every validator gets from the
// committing process's environment (PATH, HOME and SHELL only where the
// project's validate_env lists them; see validateEnv).
var validateBaseEnv = []string{"USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "TZ"}

// Protects reports whether the selectors recorded at open protect path
// (base-relative): matched, like every selector, relative to the project
// root (see project).
func (t *Tx) Protects(path string, isDir bool) (bool, error) {
	prot, err := newProjectSelector(t.rec.Protect, string(t.rec.Under))
	if err != nil {
		return false, fmt.Errorf("protected selectors in %s: %w", t.st.Path(recordFile), err)
	}
	return prot.Match(path, isDir), nil
}
