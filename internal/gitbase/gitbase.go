// Package gitbase reads what git knows about a base that lies in a git
// repository: which tracked paths were clean (equal to HEAD) when a
// transaction opened, and HEAD's version of a path. A path that was clean
// at open has HEAD's blob as its content at open, so git can supply the
// common ancestor of a three-way merge even when airlock never saw the
// bytes.
//
// It runs git through package git, so that what it reads is the base's own
// repository whatever GIT_DIR or GIT_INDEX_FILE airlock inherited; a base
// outside a repository, or a machine without git, simply has no such
// knowledge (Take returns nil, nil).
package gitbase

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/airlockdev/airlock/internal/git"
)

// Snapshot is what git said about the base when a transaction opened.
type Snapshot struct {
	// Head is the commit HEAD named at open.
	Head string `json:"head"`
	// Prefix is the base's path relative to the repository's top, with a
	// trailing slash ("" when the base is the top).
	Prefix string `json:"prefix"`
	// Dirty lists the base-relative tracked paths that differed from HEAD
	// (in the index or the working tree) at open.
	Dirty []string `json:"dirty"`
}

// Take records HEAD and the dirty tracked paths of the repository holding
// base. It returns nil, nil when base is not in a git work tree or git is
// not installed.
func Take(ctx context.Context, base string) (*Snapshot, error) {
	// One rev-parse answers all three questions (a process fewer on every
	// open): whether base is in a work tree, its prefix, and HEAD's
	// commit, printed last. It fails, having printed the first two, when
	// HEAD has no commit yet.
	out, err := read(ctx, base, "rev-parse", "--is-inside-work-tree", "--show-prefix", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return nil, nil // not a repository, no git, or no commit yet: nothing to know
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) < 3 || lines[0] != "true" {
		return nil, nil
	}
	// The prefix is every line between: a directory's name may hold a
	// newline.
	s := &Snapshot{Prefix: strings.Join(lines[1:len(lines)-1], "\n"), Head: lines[len(lines)-1]}
	// -z keeps names exact; --no-renames reports both sides of a rename.
	st, err := read(ctx, base, "status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames", "--ignore-submodules=all", "--", ".")
	if err != nil {
		return nil, err
	}
	for _, rec := range bytes.Split(st, []byte{0}) {
		if len(rec) < 4 {
			continue
		}
		// "XY path" relative to the repository top.
		p := strings.TrimPrefix(string(rec[3:]), s.Prefix)
		s.Dirty = append(s.Dirty, p)
	}
	return s, nil
}

// Clean reports whether a base-relative path was tracked and clean at the
// snapshot, i.e. whether HEAD's blob was its content then. Untracked paths
// are not in HEAD and report false through Blob.
func (s *Snapshot) Clean(path string) bool {
	if s == nil || s.Head == "" {
		return false
	}
	for _, d := range s.Dirty {
		if d == path {
			return false
		}
	}
	return true
}

// Blob returns the bytes of a base-relative path in the snapshot's HEAD,
// and false when HEAD has no such regular file.
func (s *Snapshot) Blob(ctx context.Context, base, path string) ([]byte, bool, error) {
	if s == nil || s.Head == "" {
		return nil, false, nil
	}
	spec := s.Head + ":" + s.Prefix + path
	typ, err := read(ctx, base, "cat-file", "-t", spec)
	if err != nil || strings.TrimSpace(string(typ)) != "blob" {
		return nil, false, nil
	}
	mode, err := read(ctx, base, "ls-tree", "--full-tree", "-z", s.Head, "--", s.Prefix+path)
	if err != nil || !bytes.HasPrefix(mode, []byte("100")) {
		return nil, false, nil // a symlink (120000) or submodule is no text ancestor
	}
	b, err := read(ctx, base, "cat-file", "blob", spec)
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// read runs git in dir. --no-optional-locks: reading must never take the
// index lock a user's own git command may need at the same moment.
func read(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return git.In(dir).Run(ctx, append([]string{"--no-optional-locks", "-c", "core.quotePath=false"}, args...)...)
}

// NamesOutside reports whether a git configuration file's text may make
// git status read, or run, what lies outside the repository and the
// configuration files Inputs covers: an include, an attributes file or a
// work tree named elsewhere, a clean or smudge filter (a program git runs
// on a file's bytes), an fsmonitor (another process's word on what
// changed). Any mention counts, in any case: a false alarm only costs a
// git status.
func NamesOutside(config []byte) bool {
	low := bytes.ToLower(config)
	for _, w := range []string{"include", "attributesfile", "worktree", "filter", "fsmonitor"} {
		if bytes.Contains(low, []byte(w)) {
			return true
		}
	}
	return false
}

// Inputs names what a snapshot depends on besides the repository itself:
// the configuration and attributes git reads from outside it (system and
// global), the environment that says where those are, and the git that
// runs. Two snapshots of a repository nothing in which changed (HEAD,
// refs, index and work tree all lie within a watched base) taken under the
// same Inputs are the same snapshot (a later open reuses the earlier one
// rather than run git status again). It is "" when that cannot be said:
// no git, or a configuration that names something outside (NamesOutside),
// whose changes nothing here would see.
func Inputs() string {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	h := sha256.New()
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_EXEC_PATH", "GIT_ATTR_NOSYSTEM"} {
		v, ok := os.LookupEnv(k)
		fmt.Fprintf(h, "%s=%t:%q\n", k, ok, v)
	}
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	configs := []string{"/etc/gitconfig", os.Getenv("GIT_CONFIG_SYSTEM"), os.Getenv("GIT_CONFIG_GLOBAL")}
	if home != "" {
		configs = append(configs, filepath.Join(home, ".gitconfig"))
	}
	if xdg != "" {
		configs = append(configs, filepath.Join(xdg, "git", "config"))
	}
	attributes := []string{"/etc/gitattributes"}
	if xdg != "" {
		attributes = append(attributes, filepath.Join(xdg, "git", "attributes"))
	}
	// The files' bytes, not their stat: they are small, and a symlink to
	// a dotfiles checkout changes its target's stat, not its own.
	for i, p := range append(configs, attributes...) {
		if p == "" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		if i < len(configs) && NamesOutside(b) {
			return ""
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%q %t %x\n", p, err == nil, sum)
	}
	fi, err := os.Stat(gitPath)
	if err != nil {
		return ""
	}
	fmt.Fprintf(h, "%q %d %d\n", gitPath, fi.Size(), fi.ModTime().UnixNano())
	return hex.EncodeToString(h.Sum(nil))
}
