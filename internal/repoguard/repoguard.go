package repoguard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
)

// Fingerprint is what a worktree shares with the base's repository and
// what would make the user's own git run code or behave otherwise, as it
// was when measured.
type Fingerprint struct {
	Dir    string `json:"dir"`     // the common git directory
	GitDir string `json:"git_dir"` // the base's own git directory
	Config string `json:"config"`  // digests of the config files (see configFiles)
	Hooks  string `json:"hooks"`   // digest of its hooks directory (names, modes, contents)
	// Modules: digest of the config files and hooks of the submodule
	// repositories kept in the common directory (modules/…), which the
	// base's git reads as well.
	Modules string `json:"modules"`
	// Branch and Head: the branch the base has checked out and its commit
	// at open; a worktree shares refs, so the command can move it.
	Branch string `json:"branch,omitempty"`
	Head   string `json:"head,omitempty"`
}

// Take measures the common git directory of the repository the
// base lies in.
func Take(ctx context.Context, base string) (*Fingerprint, error) {
	out, err := git.In(base).Run(ctx, "rev-parse", "--git-common-dir", "--git-dir")
	if err != nil {
		return nil, err
	}
	dirs := strings.Fields(string(out))
	if len(dirs) != 2 {
		return nil, fmt.Errorf("git rev-parse in %s said %q", base, out)
	}
	for i, d := range dirs {
		if !filepath.IsAbs(d) {
			dirs[i] = filepath.Join(base, d)
		}
	}
	g := &Fingerprint{Dir: dirs[0], GitDir: dirs[1]}
	if b, err := git.In(base).Run(ctx, "symbolic-ref", "-q", "HEAD"); err == nil {
		g.Branch = strings.TrimSpace(string(b))
		if h, err := git.In(base).Run(ctx, "rev-parse", "-q", "--verify", g.Branch); err == nil {
			g.Head = strings.TrimSpace(string(h))
		}
	}
	return g, g.measure()
}

// modulesDigest is a digest of every config file and hook of the
// submodule repositories under the common directory's modules/.
func modulesDigest(dir string) (string, error) {
	root := filepath.Join(dir, "modules")
	var parts []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "objects" || d.Name() == "refs" || d.Name() == "logs") {
			return filepath.SkipDir
		}
		name := d.Name()
		if name == "config" || name == "config.worktree" || (d.IsDir() && name == "hooks") {
			dg, err := digestPath(p)
			if err != nil {
				return err
			}
			parts = append(parts, p+"="+dg)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", root, err)
	}
	return strings.Join(parts, ","), nil
}

// configFiles are the config files git reads in the base that a git in
// the worktree can write: the repository's, and the per-worktree ones
// (extensions.worktreeConfig) of the repository and of the base's own
// git directory.
func (g *Fingerprint) configFiles() []string {
	files := []string{filepath.Join(g.Dir, "config"), filepath.Join(g.Dir, "config.worktree")}
	if g.GitDir != "" && g.GitDir != g.Dir {
		files = append(files, filepath.Join(g.GitDir, "config.worktree"))
	}
	return files
}

// measure sets the digests from the files as they are now.
func (g *Fingerprint) measure() error {
	var all []string
	for _, f := range g.configFiles() {
		d, err := digestPath(f)
		if err != nil {
			return err
		}
		all = append(all, d)
	}
	g.Config = strings.Join(all, ",")
	var err error
	if g.Hooks, err = digestPath(filepath.Join(g.Dir, "hooks")); err != nil {
		return err
	}
	g.Modules, err = modulesDigest(g.Dir)
	return err
}

// digestPath is a digest of what p holds: a file's mode and bytes, a
// directory's entries (name, mode, content) one level deep, a symlink's
// target; "" when absent.
func digestPath(p string) (string, error) {
	h := sha256.New()
	var add func(p, name string, depth int) error
	add = func(p, name string, depth int) error {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%o\x00", name, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h.Write([]byte(t))
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		case fi.IsDir():
			ents, err := os.ReadDir(p)
			if err != nil {
				return err
			}
			names := make([]string, 0, len(ents))
			for _, e := range ents {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			for _, n := range names {
				if err := add(filepath.Join(p, n), n, depth+1); err != nil {
					return err
				}
			}
		}
		h.Write([]byte{0})
		return nil
	}
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err := add(p, filepath.Base(p), 0); err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Changed lists what of the repository changed since was was taken: its
// config files, its hooks, its submodules' config and hooks.
func (was *Fingerprint) Changed() ([]string, error) {
	now := &Fingerprint{Dir: was.Dir, GitDir: was.GitDir, Branch: was.Branch}
	if err := now.measure(); err != nil {
		return nil, err
	}
	var changed []string
	if now.Config != was.Config {
		changed = append(changed, filepath.Join(was.Dir, "config"))
	}
	if now.Hooks != was.Hooks {
		changed = append(changed, filepath.Join(was.Dir, "hooks"))
	}
	if now.Modules != was.Modules {
		changed = append(changed, filepath.Join(was.Dir, "modules"))
	}
	return changed, nil
}

// BranchMoved is the commit the branch checked out in base when was was
// taken names now, when that is another commit than it named then; "" if
// it is the same, or cannot be told.
func (was *Fingerprint) BranchMoved(ctx context.Context, base string) string {
	if was.Branch == "" || was.Head == "" {
		return ""
	}
	h, err := git.In(base).Run(ctx, "rev-parse", "-q", "--verify", was.Branch)
	now := strings.TrimSpace(string(h))
	if err != nil || now == was.Head {
		return ""
	}
	return now
}
