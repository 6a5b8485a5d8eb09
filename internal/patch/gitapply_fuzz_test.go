package patch

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// FuzzGitApply holds Write to git itself: for any pair of sides of one
// path, `git apply` of the patch turns a tree holding the old side into one
// holding the new side exactly (kind, executable bit, content, symlink
// target). Each input costs a git process, so inputs are kept small.
func FuzzGitApply(f *testing.F) {
	if _, err := exec.LookPath("git"); err != nil {
		testbin.Missing(f, "git is not installed: the comparison with git apply needs it")
	}
	f.Add("f", byte(1), []byte("a\nb\nc\n"), byte(1), []byte("a\nB\nc\n"))
	f.Add("dir/sp ace", byte(1), []byte("no newline"), byte(2), []byte("no newline\n"))
	f.Add("caf\xc3\xa9\t\"q\"", byte(0), []byte(nil), byte(1), []byte("\x00binary\xff"))
	f.Add("l", byte(3), []byte("target"), byte(1), []byte("file\r\n"))
	f.Add("f", byte(1), []byte("file"), byte(3), []byte("../elsewhere"))
	f.Add("gone/x", byte(2), []byte("#!/bin/sh\n"), byte(0), []byte(nil))
	f.Add("bin", byte(1), bytes.Repeat([]byte{0, 1, 2, 255}, 300), byte(1), bytes.Repeat([]byte{0, 1, 3, 255}, 300))
	f.Fuzz(func(t *testing.T, path string, oldKind byte, oldData []byte, newKind byte, newData []byte) {
		if !validPath(path) || len(path) > 64 || len(oldData) > 4096 || len(newData) > 4096 {
			return
		}
		o, ok1 := fuzzSide(oldKind, oldData)
		n, ok2 := fuzzSide(newKind, newData)
		if !ok1 || !ok2 {
			return
		}
		var patch bytes.Buffer
		if err := Write(&patch, []File{{Path: path, Old: o, New: n}}); err != nil {
			t.Fatal(err)
		}
		if patch.Len() == 0 {
			return
		}
		dir := t.TempDir()
		tree := filepath.Join(dir, "tree")
		check := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		check(os.Mkdir(tree, 0o755))
		full := filepath.Join(tree, filepath.FromSlash(path))
		put(t, full, o, oldData)
		pf := filepath.Join(dir, "change.patch")
		check(os.WriteFile(pf, patch.Bytes(), 0o644))
		cmd := exec.Command("git", "apply", "--whitespace=nowarn", pf)
		cmd.Dir = tree
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_DIR="+filepath.Join(dir, "no-repo"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply refused the patch: %v\n%s\npatch:\n%q", err, out, patch.String())
		}
		if d := differs(full, n, newData); d != "" {
			t.Fatalf("after git apply, %s\npatch:\n%q", d, patch.String())
		}
	})
}

// put makes full hold side s with data.
func put(t *testing.T, full string, s Side, data []byte) {
	t.Helper()
	switch gitMode(s) {
	case 0:
		return
	case modeSymlink:
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(string(data), full); err != nil {
			t.Fatal(err)
		}
	default:
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := fs.FileMode(0o644)
		if gitMode(s) == modeExec {
			mode = 0o755
		}
		if err := os.WriteFile(full, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// differs says how full differs from side s with data, or "".
func differs(full string, s Side, data []byte) string {
	fi, err := os.Lstat(full)
	switch gitMode(s) {
	case 0:
		if err == nil {
			return "the path exists, want it absent"
		}
		return ""
	case modeSymlink:
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return "the path is not a symlink"
		}
		if target, _ := os.Readlink(full); target != string(data) {
			return "the symlink points to " + target + ", want " + string(data)
		}
		return ""
	}
	if err != nil || !fi.Mode().IsRegular() {
		return "the path is not a regular file"
	}
	if exec := fi.Mode()&0o100 != 0; exec != (gitMode(s) == modeExec) {
		return "the executable bit differs"
	}
	got, err := os.ReadFile(full)
	if err != nil || !bytes.Equal(got, data) {
		return "the content differs"
	}
	return ""
}
