package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Shared test helpers (internal/testbin).
var (
	realDir  = testbin.RealDir
	readFile = testbin.ReadFile
	exists   = testbin.Exists
)

// airlockBin is the binary every scenario drives; TestMain builds it once.
var airlockBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &airlockBin)) }

// commandTimeout bounds every process a scenario starts, so that a hang is
// a failure, not a stuck test run.
const commandTimeout = 30 * time.Second

// h is one scenario's world: a base, a state root outside it, and a home
// directory, each its own temporary directory.
type h struct {
	t     *testing.T
	base  string
	state string
	home  string
	env   []string // extra variables for every airlock run
	// oracleDir is where the last oracle ran.
	oracleDir string
}

func newH(t *testing.T) *h {
	t.Helper()
	x := &h{t: t, base: realDir(t), state: filepath.Join(realDir(t), "state"), home: realDir(t)}
	return x
}

// environ is the environment of every process a scenario starts
// (testbin.Environ), with the scenario's own extra variables.
func (x *h) environ(extra ...string) []string {
	return testbin.Environ(x.state, x.home, append(append([]string(nil), x.env...), extra...)...)
}

// result is how one airlock invocation ended.
type result struct {
	args     []string
	stdout   string
	stderr   string
	code     int // exit code; -1 when killed by a signal
	signal   syscall.Signal
	block    map[string]string
	blockLen int
}

func (r result) String() string {
	return fmt.Sprintf("airlock %q: exit %d (signal %v)\nstdout:\n%s\nstderr:\n%s", r.args, r.code, r.signal, r.stdout, r.stderr)
}

// run is one invocation of a command-line tool.
type run struct {
	dir  string   // working directory; "" means the scenario's home
	env  []string // extra environment
	args []string
	bin  string // the airlock binary; "" means airlockBin
	// newSession starts airlock in a session of its own, without a
	// controlling terminal, as a supervisor or agent harness would.
	newSession bool
}

// airlock runs the binary from the scenario's home directory.
func (x *h) airlock(args ...string) result {
	x.t.Helper()
	return x.exec(run{args: args})
}

// airlockEnv runs the binary with extra environment variables.
func (x *h) airlockEnv(env []string, args ...string) result {
	x.t.Helper()
	return x.exec(run{env: env, args: args})
}

func (x *h) exec(r run) result {
	x.t.Helper()
	p := x.start(r)
	return p.wait()
}

// proc is an airlock process a scenario started and has not waited for.
type proc struct {
	x      *h
	cmd    *exec.Cmd
	cancel context.CancelFunc
	out    *bytes.Buffer
	err    *bytes.Buffer
	args   []string
}

func (x *h) start(r run) *proc {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	bin := airlockBin
	if r.bin != "" {
		bin = r.bin
	}
	cmd := exec.CommandContext(ctx, bin, r.args...)
	cmd.Dir = r.dir
	if cmd.Dir == "" {
		cmd.Dir = x.home
	}
	cmd.Env = x.environ(r.env...)
	if r.newSession {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	// A command airlock started may outlive a killed airlock and hold the
	// output pipes: do not wait for it forever.
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		cancel()
		x.t.Fatalf("start airlock %q: %v", r.args, err)
	}
	p := &proc{x: x, cmd: cmd, cancel: cancel, out: &out, err: &errb, args: r.args}
	x.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		cancel()
	})
	return p
}

func (p *proc) wait() result {
	p.x.t.Helper()
	err := p.cmd.Wait()
	p.cancel()
	res := result{args: p.args, stdout: p.out.String(), stderr: p.err.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.signal = ws.Signal()
		}
	default:
		p.x.t.Fatalf("airlock %q: %v", p.args, err)
	}
	res.block, res.blockLen = parseBlock(p.x.t, res.stderr)
	return res
}

// parseBlock reads the airlock.key=value lines of stderr.
func parseBlock(t *testing.T, stderr string) (map[string]string, int) {
	t.Helper()
	var block map[string]string
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		rest, ok := strings.CutPrefix(line, "airlock.")
		if !ok {
			continue
		}
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			t.Errorf("block line without '=': %q", line)
			continue
		}
		if block == nil {
			block = map[string]string{}
		}
		if _, dup := block[k]; dup {
			t.Errorf("block key %q appears twice in:\n%s", k, stderr)
		}
		block[k] = v
		n++
	}
	return block, n
}

// blockKeys are SPEC.md's block keys, in order.
var blockKeys = []string{"tx", "outcome", "added", "modified", "deleted", "refusal", "refused_paths",
	"base_digest", "result_digest", "diff_digest", "receipt", "not_transactional"}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// wantBlock checks the settle block: every key present, and the given
// values exact.
func wantBlock(t *testing.T, r result, want map[string]string) {
	t.Helper()
	if r.block == nil {
		t.Fatalf("no airlock.* block on stderr\n%s", r)
	}
	for _, k := range blockKeys {
		if _, ok := r.block[k]; !ok {
			t.Errorf("block has no airlock.%s\n%s", k, r)
		}
	}
	if r.blockLen != len(blockKeys) {
		t.Errorf("block has %d lines, want %d\n%s", r.blockLen, len(blockKeys), r)
	}
	for k, v := range want {
		if got := r.block[k]; got != v {
			t.Errorf("airlock.%s = %q, want %q\n%s", k, got, v, r)
		}
	}
	if got := r.block["not_transactional"]; got != "network,databases,processes,outside_surface" {
		t.Errorf("airlock.not_transactional = %q", got)
	}
	for _, k := range []string{"base_digest", "result_digest", "diff_digest"} {
		if v := r.block[k]; !digestRE.MatchString(v) {
			t.Errorf("airlock.%s = %q, not sha256:<64 hex>", k, v)
		}
	}
}

func wantCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\n%s", r.code, code, r)
	}
}

// --- trees ---

// node is one entry of a tree, as a snapshot compares it.
type node struct {
	Kind    string // "file", "dir", "symlink", "fifo", "other"
	Mode    fs.FileMode
	Content string
	Target  string
}

func (n node) String() string {
	switch n.Kind {
	case "file":
		c := n.Content
		if len(c) > 40 {
			c = c[:40] + "..."
		}
		return fmt.Sprintf("file %04o %q", n.Mode, c)
	case "symlink":
		return fmt.Sprintf("symlink -> %q", n.Target)
	}
	return fmt.Sprintf("%s %04o", n.Kind, n.Mode)
}

// tree maps slash-separated relative paths to entries.
type tree map[string]node

func F(mode fs.FileMode, content string) node {
	return node{Kind: "file", Mode: mode, Content: content}
}
func D(mode fs.FileMode) node { return node{Kind: "dir", Mode: mode} }
func L(target string) node    { return node{Kind: "symlink", Target: target} }
func P() node                 { return node{Kind: "fifo", Mode: 0o644} }

// build creates spec under dir. Missing parents are made 0755; directory
// modes are set last, deepest first, so that a restrictive mode cannot get
// in the way.
func build(t *testing.T, dir string, spec tree) {
	t.Helper()
	paths := make([]string, 0, len(spec))
	for p := range spec {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		n := spec[p]
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch n.Kind {
		case "file":
			err = os.WriteFile(full, []byte(n.Content), 0o600)
			if err == nil {
				err = os.Chmod(full, n.Mode)
			}
		case "dir":
			err = os.MkdirAll(full, 0o755)
		case "symlink":
			err = os.Symlink(n.Target, full)
		case "fifo":
			err = syscall.Mkfifo(full, uint32(n.Mode))
			if err == nil {
				err = os.Chmod(full, n.Mode)
			}
		default:
			t.Fatalf("build: unknown kind %q for %s", n.Kind, p)
		}
		if err != nil {
			t.Fatalf("build %s: %v", p, err)
		}
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if n := spec[paths[i]]; n.Kind == "dir" {
			if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(paths[i])), n.Mode); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// snapshot reads dir (not following symlinks) into a tree. skip, if set,
// leaves out a path and everything under it.
func snapshot(t *testing.T, dir string, skip func(rel string) bool) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		n := node{Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
		switch m := fi.Mode(); {
		case m.IsRegular():
			n.Kind = "file"
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			n.Content = string(b)
		case m.IsDir():
			n.Kind = "dir"
		case m&fs.ModeSymlink != 0:
			n.Kind = "symlink"
			n.Mode = 0
			if n.Target, err = os.Readlink(path); err != nil {
				return err
			}
		case m&fs.ModeNamedPipe != 0:
			n.Kind = "fifo"
		default:
			n.Kind = "other"
		}
		out[rel] = n
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return out
}

// treeDiff lists how got differs from want, one line per path.
func treeDiff(want, got tree) []string {
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var d []string
	for _, p := range paths {
		w, wok := want[p]
		g, gok := got[p]
		switch {
		case !gok:
			d = append(d, fmt.Sprintf("%q: missing (want %s)", p, w))
		case !wok:
			d = append(d, fmt.Sprintf("%q: unexpected %s", p, g))
		case w != g:
			d = append(d, fmt.Sprintf("%q: %s, want %s", p, g, w))
		}
	}
	return d
}

func wantTree(t *testing.T, what string, want, got tree) {
	t.Helper()
	if d := treeDiff(want, got); len(d) > 0 {
		t.Errorf("%s differs (%d paths):\n  %s", what, len(d), strings.Join(d, "\n  "))
	}
}

// counts is what a change set from before to after adds, modifies and
// deletes, path by path; a directory is modified only by its own kind or
// mode.
func counts(before, after tree) (added, modified, deleted int) {
	for p, a := range after {
		b, ok := before[p]
		switch {
		case !ok:
			added++
		case a != b:
			modified++
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			deleted++
		}
	}
	return
}

func itoa(n int) string { return fmt.Sprint(n) }

// oracle copies base with cp -a and runs script there with sh, the same
// way airlock's command will run it; it returns the resulting tree.
func (x *h) oracle(script string, env ...string) tree {
	x.t.Helper()
	dir := filepath.Join(realDir(x.t), "oracle")
	if out, err := exec.Command("cp", "-a", x.base, dir).CombinedOutput(); err != nil {
		x.t.Fatalf("cp -a: %v\n%s", err, out)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = x.environ(env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		x.t.Fatalf("oracle script failed: %v\n%s", err, out)
	}
	x.oracleDir = dir
	return snapshot(x.t, dir, nil)
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(commandTimeout)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within %v", path, commandTimeout)
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stagedPath is the staged workspace recorded in a transaction's open
// record.
func (x *h) stagedPath(id string) string {
	x.t.Helper()
	var rec struct {
		Staged json.RawMessage `json:"staged"`
	}
	b, err := os.ReadFile(filepath.Join(x.state, "tx", id, "open.json"))
	if err != nil {
		x.t.Fatalf("open record of %s: %v", id, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		x.t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal(rec.Staged, &s); err != nil {
		x.t.Fatalf("staged path of %s is not a plain string: %s", id, rec.Staged)
	}
	return s
}

// oneLine checks that stderr is exactly one "airlock: " line and that it
// mentions every word.
func oneLine(t *testing.T, r result, words ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "airlock: ") {
		t.Errorf("want one `airlock: ...` line on stderr, got %d lines\n%s", len(lines), r)
	}
	for _, w := range words {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr does not mention %q\n%s", w, r)
		}
	}
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// backdate sets the times of everything under dir (not following
// symlinks) to age ago, out of every racy window.
func backdate(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	old := time.Now().Add(-age)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chtimes(path, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}
