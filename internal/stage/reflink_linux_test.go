package stage

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestReflinkRefusesWithoutClones runs where t.TempDir's file system
// cannot clone (ext4, tmpfs): Supported must say so, Stage must fail with
// the reason and leave nothing, and auto must pick copy.
func TestReflinkRefusesWithoutClones(t *testing.T) {
	state := t.TempDir()
	if ok, _ := cloneSupport(state); ok {
		t.Skipf("%s is on %s, which clones files: nothing to refuse", state, fsName(state))
	}
	ok, reason := reflinkBackend{}.Supported(state)
	if ok || !strings.Contains(reason, "cannot clone files") || !strings.Contains(reason, fsName(state)) {
		t.Fatalf("Supported = %v, %q; want false naming %s and that it cannot clone", ok, reason, fsName(state))
	}
	base := filepath.Join(t.TempDir(), "base")
	must(t, os.MkdirAll(filepath.Join(base, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "d/f"), []byte("data"), 0o644))
	dir := filepath.Join(state, "staged")
	_, err := reflinkBackend{}.Stage(t.Context(), Request{Base: base, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "cannot clone files") || !strings.Contains(err.Error(), "--backend copy") {
		t.Fatalf("Stage error = %v, want one saying files cannot be cloned and to use --backend copy", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("a failed reflink stage left %s: %v", dir, err)
	}
	b, err := Choose(Auto, state, base)
	must(t, err)
	if b.Name() != Copy {
		t.Errorf("auto chose %s where files cannot be cloned, want copy", b.Name())
	}
}

// cloningFS mounts a small btrfs (or xfs) image for the test, or skips
// saying why it cannot.
func cloningFS(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a btrfs or xfs image needs root")
	}
	img := filepath.Join(t.TempDir(), "fs.img")
	mnt := t.TempDir()
	var made bool
	for _, mk := range [][]string{{"mkfs.btrfs", "-q", "-f"}, {"mkfs.xfs", "-q", "-f"}} {
		if _, err := exec.LookPath(mk[0]); err != nil {
			continue
		}
		must(t, os.WriteFile(img, nil, 0o600))
		must(t, os.Truncate(img, 320<<20))
		if out, err := exec.Command(mk[0], append(mk[1:], img)...).CombinedOutput(); err != nil {
			t.Logf("%s: %v\n%s", mk[0], err, out)
			continue
		}
		if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
			testbin.Missing(t, "cannot loop-mount a %s image (loop devices?): %v\n%s", mk[0], err, out)
		}
		made = true
		break
	}
	if !made {
		testbin.Missing(t, "no btrfs or xfs image could be made: mkfs.btrfs and mkfs.xfs are missing or failed (apt-get install btrfs-progs xfsprogs)")
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
	return mnt
}

func TestReflinkClones(t *testing.T) {
	mnt := cloningFS(t)
	ok, reason := reflinkBackend{}.Supported(mnt)
	if !ok {
		t.Fatalf("reflink not supported on %s: %s", fsName(mnt), reason)
	}
	base := filepath.Join(mnt, "base")
	state := filepath.Join(mnt, "state")
	must(t, os.MkdirAll(filepath.Join(base, "d/e"), 0o750))
	must(t, os.MkdirAll(state, 0o700))
	big := strings.Repeat("block of data\n", 100_000)
	must(t, os.WriteFile(filepath.Join(base, "d/e/big"), []byte(big), 0o640))
	must(t, os.WriteFile(filepath.Join(base, "small"), []byte("s"), 0o755))
	must(t, os.Symlink("d/e/big", filepath.Join(base, "link")))
	b, err := Choose(Auto, state, base)
	must(t, err)
	if b.Name() != Reflink {
		t.Fatalf("auto chose %s on %s, want reflink", b.Name(), fsName(mnt))
	}
	dir := filepath.Join(state, "staged")
	if _, err := b.Stage(t.Context(), Request{Base: base, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("diff", "-r", "--no-dereference", base, dir).CombinedOutput(); err != nil {
		t.Fatalf("diff -r: %v\n%s", err, out)
	}
	want, got := facts(t, base, nil), facts(t, dir, nil)
	for p, w := range want {
		if p != "" && got[p].Ino == w.Ino {
			t.Errorf("%q shares inode %d with the base", p, w.Ino)
		}
		if got[p].Mode != w.Mode || (p != "" && got[p].Mtime != w.Mtime) {
			t.Errorf("%q: mode %v mtime %d, want %v %d", p, got[p].Mode, got[p].Mtime, w.Mode, w.Mtime)
		}
	}
	// A write to the clone must leave the base's bytes alone.
	must(t, os.WriteFile(filepath.Join(dir, "d/e/big"), []byte("changed"), 0o640))
	if b, _ := os.ReadFile(filepath.Join(base, "d/e/big")); string(b) != big {
		t.Fatal("a write to the staged clone changed the base")
	}
	must(t, b.Remove(t.Context(), dir))
}
