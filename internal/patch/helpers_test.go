package patch

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/testbin"
)

// node is one entry of a test tree: a file (data is its content), a
// symlink (data is its target) or a directory.
type node struct {
	kind manifest.Kind
	mode fs.FileMode
	data string
}

type tree map[string]node

func file(data string) node               { return node{manifest.KindFile, 0o644, data} }
func exe(data string) node                { return node{manifest.KindFile, 0o755, data} }
func link(target string) node             { return node{manifest.KindSymlink, 0, target} }
func dir() node                           { return node{manifest.KindDir, 0o755, ""} }
func withMode(n node, m fs.FileMode) node { n.mode = m; return n }

// writeTree creates tr under root, parents first.
func writeTree(t *testing.T, root string, tr tree) {
	t.Helper()
	paths := make([]string, 0, len(tr))
	for p := range tr {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		n := tr[p]
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		switch n.kind {
		case manifest.KindDir:
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(full, n.mode); err != nil {
				t.Fatal(err)
			}
		case manifest.KindSymlink:
			if err := os.Symlink(n.data, full); err != nil {
				t.Fatal(err)
			}
		case manifest.KindFile:
			if err := os.WriteFile(full, []byte(n.data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(full, n.mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// readTree measures the tree under root, leaving out a top-level .git.
// Directories are recorded (mode 0) so that a missing or extra one shows.
func readTree(t *testing.T, root string) tree {
	t.Helper()
	tr := tree{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if rel == ".git" {
			return filepath.SkipDir
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			tr[rel] = node{kind: manifest.KindDir}
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			tr[rel] = link(target)
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			tr[rel] = node{manifest.KindFile, info.Mode() & manifest.ModeMask, string(b)}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// gitView keeps what a git patch can carry: kinds, content, targets and a
// file's owner-executable bit. Directories that a spec leaves implied are
// added, so that one git leaves behind or fails to make shows.
func gitView(tr tree) tree {
	out := tree{}
	for p := range tr {
		for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
			out[p[:i]] = node{kind: manifest.KindDir}
		}
	}
	for p, n := range tr {
		switch n.kind {
		case manifest.KindDir:
			n.mode = 0
		case manifest.KindFile:
			n.mode &= 0o100
		}
		out[p] = n
	}
	return out
}

func side(n node, ok bool) Side {
	if !ok {
		return Side{}
	}
	s := Side{Kind: n.kind, Mode: n.mode}
	switch n.kind {
	case manifest.KindSymlink:
		s.Target = n.data
	case manifest.KindFile:
		data := n.data
		s.Open = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(data)), nil }
	}
	return s
}

// changes lists what differs between two trees, as a change set would.
func changes(base, next tree) []File {
	paths := map[string]bool{}
	for p := range base {
		paths[p] = true
	}
	for p := range next {
		paths[p] = true
	}
	var files []File
	for p := range paths {
		o, inO := base[p]
		n, inN := next[p]
		if inO && inN && o == n {
			continue
		}
		if inO && inN && o.kind == manifest.KindDir && n.kind == manifest.KindDir && o.mode == n.mode {
			continue
		}
		files = append(files, File{Path: p, Old: side(o, inO), New: side(n, inN)})
	}
	// Reversed, so that Write's own ordering is what the tests see.
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(b.Path, a.Path) })
	return files
}

func writePatch(t *testing.T, files []File) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, files); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testbin.Missing(t, "git is not on PATH: these tests use git as the oracle for the patch format")
	}
}

// git runs git in dir with a configuration of its own, so that the user's
// settings (autocrlf, quotePath, statGraphWidth, …) and any repository
// above dir cannot change what it does.
func git(t *testing.T, dir string, stdin []byte, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GIT_") && !strings.HasPrefix(e, "COLUMNS=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"LC_ALL=C")
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// applyWithGit writes base into a fresh directory (a git repository when
// repo is set), runs `git apply --binary` there with the patch and returns
// the tree it leaves. flags go to git apply.
func applyWithGit(t *testing.T, base tree, patch []byte, repo bool, flags ...string) (tree, error) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "base")
	writeTree(t, root, base)
	if repo {
		if _, err := git(t, root, nil, "init", "-q"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := git(t, root, patch, append([]string{"apply", "--binary"}, flags...)...); err != nil {
		return nil, err
	}
	return readTree(t, root), nil
}

// diffTrees describes how got differs from want, or returns "".
func diffTrees(got, want tree) string {
	var b strings.Builder
	paths := map[string]bool{}
	for p := range got {
		paths[p] = true
	}
	for p := range want {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	slices.Sort(sorted)
	for _, p := range sorted {
		g, inG := got[p]
		w, inW := want[p]
		switch {
		case !inG:
			fmt.Fprintf(&b, "%q: missing, want %v %o %q\n", p, w.kind, w.mode, w.data)
		case !inW:
			fmt.Fprintf(&b, "%q: unexpected %v %o %q\n", p, g.kind, g.mode, g.data)
		case g != w:
			fmt.Fprintf(&b, "%q: got %v %o %q, want %v %o %q\n", p, g.kind, g.mode, g.data, w.kind, w.mode, w.data)
		}
	}
	return b.String()
}
