package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MountImage makes a file system image of size bytes with mkfs (its
// program and arguments, the image's path appended: "mkfs.ext4", "-q",
// "-I", "128"), loop-mounts it on a new directory and returns that
// directory, unmounted when the test ends. Loop-mounting needs root: a
// test run as another user skips; a missing mkfs or loop device stops the
// test through Missing (it fails under CI=true).
func MountImage(t testing.TB, size int64, mkfs ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop-mounting a file system image needs root")
	}
	Require(t, mkfs[0], "it makes the file system image the test mounts (apt-get install e2fsprogs)")
	img := filepath.Join(t.TempDir(), "fs.img")
	mnt := t.TempDir()
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs[0], append(mkfs[1:], img)...).CombinedOutput(); err != nil {
		Missing(t, "%q cannot make a file system image: %v\n%s", mkfs, err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		Missing(t, "cannot loop-mount a %s image (loop devices?): %v\n%s", mkfs[0], err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	})
	return mnt
}

// SecondsFS loop-mounts an ext4 made with 128-byte inodes, which keeps
// timestamps to whole seconds (as ext2, ext3, NFSv3 and HFS+ do), and
// returns its mount point.
func SecondsFS(t testing.TB) string {
	t.Helper()
	return MountImage(t, 64<<20, "mkfs.ext4", "-q", "-I", "128")
}
