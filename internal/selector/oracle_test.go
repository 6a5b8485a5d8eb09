package selector

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// node is one path of the oracle's tree.
type node struct {
	path  string
	isDir bool
}

// gitOracle answers "is this path ignored?" with git itself: a scratch
// repository holds the tree (so that git can see which paths are
// directories) and the patterns go into its root .gitignore.
type gitOracle struct {
	dir string
	env []string
}

// newGitOracle builds the tree in a fresh repository. Every parent of a node
// must be listed as a directory node before it.
func newGitOracle(t testing.TB, tree []node) *gitOracle {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testbin.Missing(t, "git is not installed: the differential test needs `git check-ignore` as its oracle")
	}
	dir := t.TempDir()
	home := t.TempDir()
	o := &gitOracle{dir: dir, env: append(os.Environ(),
		// Keep the user's and the system's excludes and config out of the
		// oracle: only our .gitignore may decide.
		"HOME="+home,
		"XDG_CONFIG_HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"LC_ALL=C",
	)}
	o.run(t, nil, "init", "-q", ".")
	for _, n := range tree {
		p := filepath.Join(dir, filepath.FromSlash(n.path))
		var err error
		if n.isDir {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil {
			t.Fatalf("build oracle tree: %v", err)
		}
	}
	return o
}

func (o *gitOracle) run(t testing.TB, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "core.excludesFile=/dev/null", "-c", "core.ignoreCase=false"}, args...)...)
	cmd.Dir = o.dir
	cmd.Env = o.env
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// check-ignore exits 1 when nothing is ignored.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || args[0] != "check-ignore" {
			t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
		}
	}
	return out
}

// ignored returns, for each path, whether git ignores it under patterns,
// and the pattern git names as deciding (for failure messages).
func (o *gitOracle) ignored(t testing.TB, patterns []string, paths []string) (map[string]bool, map[string]string) {
	t.Helper()
	gi := strings.Join(patterns, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(o.dir, ".gitignore"), []byte(gi), 0o644); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	out := o.run(t, in.Bytes(), "check-ignore", "--no-index", "-v", "-n", "-z", "--stdin")
	fields := bytes.Split(out, []byte{0})
	if len(fields) > 0 && len(fields[len(fields)-1]) == 0 {
		fields = fields[:len(fields)-1]
	}
	if len(fields) != 4*len(paths) {
		t.Fatalf("git check-ignore gave %d fields for %d paths: %q", len(fields), len(paths), out)
	}
	res := map[string]bool{}
	why := map[string]string{}
	for i := 0; i < len(fields); i += 4 {
		pat, path := string(fields[i+2]), string(fields[i+3])
		res[path] = pat != "" && pat[0] != '!'
		why[path] = pat
	}
	for _, p := range paths {
		if _, ok := res[p]; !ok {
			t.Fatalf("git check-ignore said nothing about %q: %q", p, out)
		}
	}
	return res, why
}
