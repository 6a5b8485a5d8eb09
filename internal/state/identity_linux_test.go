package state

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestIdentitySurvivesAnotherDevice: what Identify reads is the file
// system's own, so it survives the image coming back on another loop
// device, where the device number does not: ext4 (f_fsid from its UUID),
// btrfs (f_fsid from its UUID and the subvolume: subvolumes, whose inode
// numbers repeat, differ) and xfs (the superblock's UUID; its f_fsid is
// the device number). tmpfs has no identity of its own: its device number.
func TestIdentitySurvivesAnotherDevice(t *testing.T) {
	for _, c := range []struct {
		name string
		mkfs []string
		size int64
		kind string
	}{
		{"ext4", []string{"mkfs.ext4", "-q", "-F"}, 16 << 20, "fsid-0000ef53-"},
		{"ext4-128", []string{"mkfs.ext4", "-q", "-F", "-I", "128"}, 16 << 20, "fsid-0000ef53-"},
		{"btrfs", []string{"mkfs.btrfs", "-q", "-f"}, 128 << 20, "fsid-9123683e-"},
		{"xfs", []string{"mkfs.xfs", "-q", "-f"}, 300 << 20, "uuid-58465342-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			img := testbin.NewLoop(t, c.mkfs, c.size, dir)
			sub := filepath.Join(dir, "sub")
			if c.name == "btrfs" {
				if out, err := exec.Command("btrfs", "subvolume", "create", sub).CombinedOutput(); err != nil {
					testbin.Missing(t, "btrfs subvolume create: %v %s", err, out)
				}
			} else if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			root, inner := identify(t, dir), identify(t, sub)
			if !strings.HasPrefix(root.FS, c.kind) || !root.Stable() {
				t.Fatalf("%s's identity is %q, want %s…", c.name, root.FS, c.kind)
			}
			if c.name == "btrfs" {
				if inner.FS == root.FS {
					t.Errorf("a btrfs subvolume has its parent's identity %s (inodes %d, %d)", root.FS, root.Ino, inner.Ino)
				}
			} else if inner.FS != root.FS {
				t.Errorf("a directory has another identity than its file system's root: %s, %s", inner.FS, root.FS)
			}
			occupy := func() {
				d := t.TempDir()
				if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", d).CombinedOutput(); err != nil {
					t.Fatalf("mount tmpfs: %v %s", err, out)
				}
				t.Cleanup(func() { exec.Command("umount", d).Run() })
			}
			if c.name == "btrfs" {
				// Its device numbers are anonymous ones, the lowest free
				// at mount: a tmpfs takes them while it is unmounted.
				img.Unmount()
				occupy()
				occupy()
			}
			img.Reattach(dir)
			root2, inner2 := identify(t, dir), identify(t, sub)
			// Another process's unmount can free the very number again
			// (a busy machine mounts and unmounts): take one more each
			// time, until the image comes back under another.
			for i := 0; c.name == "btrfs" && root2.Dev == root.Dev && i < 8; i++ {
				img.Unmount()
				occupy()
				img.Reattach(dir)
				root2, inner2 = identify(t, dir), identify(t, sub)
			}
			if root2.Dev == root.Dev {
				t.Fatalf("the image came back under the same device number %#x", root.Dev)
			}
			if root2.Match(root) != Same || inner2.Match(inner) != Same || root2.Key() != root.Key() || inner2.Key() != inner.Key() {
				t.Errorf("the identity did not survive another device: %v, %v before; %v, %v after", root, inner, root2, inner2)
			}
		})
	}
	t.Run("tmpfs", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mounting a tmpfs needs root")
		}
		dir := t.TempDir()
		if out, err := exec.Command("mount", "-t", "tmpfs", "tmpfs", dir).CombinedOutput(); err != nil {
			testbin.Missing(t, "mount tmpfs: %v %s", err, out)
		}
		defer exec.Command("umount", dir).Run()
		if id := identify(t, dir); id.FS != devFS(id.Dev) || id.Stable() {
			t.Errorf("tmpfs's identity is %q, want its device number", id.FS)
		}
	})
}

func identify(t *testing.T, path string) Identity {
	t.Helper()
	id, err := Identify(path)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSharedIdentityRefused: two file systems with one UUID mounted at
// once (a cloned image) have one identity; the state of one's base is not
// taken for the other's.
func TestSharedIdentityRefused(t *testing.T) {
	mkfs := []string{"mkfs.ext4", "-q", "-F", "-U", "6f0cb4a3-51e4-4c1e-9bd7-2a8f1a0c7d55"}
	a, b := t.TempDir(), t.TempDir()
	testbin.NewLoop(t, mkfs, 16<<20, a)
	testbin.NewLoop(t, mkfs, 16<<20, b)
	if ia, ib := identify(t, a), identify(t, b); ia.Key() != ib.Key() || ia.Dev == ib.Dev {
		t.Fatalf("two images with one UUID: %v, %v", ia, ib)
	}
	s := openStore(t)
	if _, err := s.Base(a); err != nil {
		t.Fatal(err)
	}
	_, err := s.Base(b)
	var shared *SharedIdentityError
	if !errors.As(err, &shared) || shared.Other != a || !strings.Contains(err.Error(), "tune2fs -U") {
		t.Fatalf("the base of a second file system with the first's UUID: %v", err)
	}
}
