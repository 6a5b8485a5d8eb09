package airlock

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockdev/airlock/internal/config"
	"github.com/airlockdev/airlock/internal/project"
)

// projectNow is the project that governs the base now, read from the base
// (see project.Project): the gate a commit is held to. The transaction's open
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
func (t *Tx) projectNow(w *workspace) (*project.Project, error) {
	recorded := func() *project.Project {
		cfg := config.Default()
		cfg.Validate = t.rec.Validate
		root := t.Base()
		if t.rec.Project != "" {
			root = string(t.rec.Project)
		}
		return &project.Project{Root: root, Under: string(t.rec.Under), Cfg: cfg}
	}
	if w.base != t.Base() || w.limited {
		return recorded(), nil
	}
	p, err := project.Find(t.Base())
	var ce *config.Error
	if errors.As(err, &ce) {
		return recorded(), nil
	}
	return p, err
}

// projectRead is the path through which the project root is read: its own
// path, or, where the base is read through another path (see baseRead),
// the same path less the base's place in the project.
func (t *Tx) projectRead(w *workspace, gate *project.Project) string {
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

// Protects reports whether the selectors recorded at open protect path
// (base-relative): matched, like every selector, relative to the project
// root (see project.Project).
func (t *Tx) Protects(path string, isDir bool) (bool, error) {
	prot, err := project.NewSelector(t.rec.Protect, string(t.rec.Under))
	if err != nil {
		return false, fmt.Errorf("protected selectors in %s: %w", t.st.Path(recordFile), err)
	}
	return prot.Match(path, isDir), nil
}

// protectOf is the protected selectors a config and the open's options
// give.
func protectOf(cfg *config.Config, extra []string, noDefault bool) []string {
	prot := slices.Concat(cfg.Protect, extra)
	if !noDefault && cfg.DefaultProtect {
		prot = append(slices.Clone(DefaultProtect), prot...)
	}
	return prot
}

// baseLinksFile, in a transaction's state, maps each symlink of the base
// at open to its target (see project.LinkAliases).
const baseLinksFile = "base.links.json"

// links reads the base's symlinks at open: from their own small file, or,
// for a transaction an earlier airlock opened, from the base manifest.
func (t *Tx) links() (map[string]string, error) {
	var links map[string]string
	err := t.st.Read(baseLinksFile, &links)
	if errors.Is(err, fs.ErrNotExist) {
		base, err := t.loadManifest(baseManifestFile)
		if err != nil {
			return nil, err
		}
		return project.BaseLinks(base), nil
	}
	return links, err
}
