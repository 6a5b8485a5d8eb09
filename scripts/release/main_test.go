package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestTarballIgnoresTimesAndOrder: two tarballs of the same bytes, made
// from files with other times and named in another order, are the same
// bytes; SOURCE_DATE_EPOCH is the only time inside.
func TestTarballIgnoresTimesAndOrder(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	must(t, os.WriteFile(a, []byte("alpha\n"), 0o755))
	must(t, os.WriteFile(b, []byte("beta\n"), 0o600))
	out1, out2 := filepath.Join(dir, "1.tar.gz"), filepath.Join(dir, "2.tar.gz")
	must(t, tarball([]string{"-o", out1, "-prefix", "p", a + "=bin/a", b + "=doc/b"}))
	must(t, os.Chtimes(a, time.Now(), time.Now().Add(-time.Hour)))
	must(t, os.Chtimes(b, time.Now(), time.Now().Add(time.Hour)))
	must(t, tarball([]string{"-o", out2, "-prefix", "p/", b + "=doc/b", a + "=bin/a"}))
	d1, err := os.ReadFile(out1)
	must(t, err)
	d2, err := os.ReadFile(out2)
	must(t, err)
	if !bytes.Equal(d1, d2) {
		t.Fatal("the two tarballs differ")
	}
	if tarBin, err := exec.LookPath("tar"); err == nil {
		list := exec.Command(tarBin, "-tvzf", out1)
		list.Env = append(os.Environ(), "TZ=UTC")
		out, err := list.CombinedOutput()
		must(t, err)
		for _, want := range []string{"-rwxr-xr-x root/root", "p/bin/a", "-rw-r--r-- root/root", "p/doc/b", "2023-11-14"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("tar -tv does not show %q:\n%s", want, out)
			}
		}
	}
}

// TestStatic: a CGO_ENABLED=0 build passes, a dynamically linked program
// (the go command itself is not one on every system, /bin/sh is) fails.
func TestStatic(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	must(t, os.WriteFile(src, []byte("package main\nimport \"os\"\nfunc main() { os.Exit(0) }\n"), 0o644))
	bin := filepath.Join(dir, "static")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := static([]string{bin}); err != nil {
		t.Errorf("a CGO_ENABLED=0 build: %v", err)
	}
	if runtime.GOOS != "linux" {
		return // /bin/sh is no ELF file there
	}
	sh, err := filepath.EvalSymlinks("/bin/sh")
	must(t, err)
	if err := static([]string{sh}); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("%s: %v, want it called dynamically linked", sh, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
