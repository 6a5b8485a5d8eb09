package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Loop is a file system image on a loop device, mounted: what a test needs
// to make a disk come back under another device number (a reboot, a USB
// disk plugged in again) deterministically, by attaching the same image
// to another loop device.
type Loop struct {
	t     testing.TB
	Image string // the image file
	Dev   string // the loop device it is attached to; "" while detached
	Dir   string // where it is mounted; "" while not mounted
	held  []string
}

// NewLoop makes an image of size bytes with mkfs (its argv; the image's
// path is appended), attaches it to a free loop device and mounts it at
// dir. Loop devices and mounts need root: as another user it skips. A
// missing tool or loop device stops it through Missing. Whatever happens,
// the test's cleanup unmounts and detaches everything it attached.
//
// The mount is made in a mount namespace of the test's own (see
// isolate): the calling goroutine, the processes it starts and its
// cleanups see it; nothing else on the machine does.
func NewLoop(t testing.TB, mkfs []string, size int64, dir string) *Loop {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop devices and mounts need root")
	}
	isolate(t)
	Require(t, "losetup", "util-linux: attaches the image to a loop device")
	Require(t, mkfs[0], "makes the image's file system")
	l := &Loop{t: t, Image: filepath.Join(t.TempDir(), "fs.img")}
	t.Cleanup(l.cleanup)
	f, err := os.Create(l.Image)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command(mkfs[0], append(mkfs[1:], l.Image)...).CombinedOutput(); err != nil {
		Missing(t, "%v could not make a file system: %v %s", mkfs, err, out)
	}
	l.Attach("")
	l.Mount(dir)
	return l
}

// Attach attaches the image to a free loop device other than avoid
// (a device it was attached to before): avoid, if free, is first taken by
// a placeholder image of its own, so the kernel cannot hand it out again.
func (l *Loop) Attach(avoid string) {
	l.t.Helper()
	if avoid != "" {
		ph := filepath.Join(l.t.TempDir(), "placeholder.img")
		if err := os.WriteFile(ph, make([]byte, 1<<20), 0o600); err != nil {
			l.t.Fatal(err)
		}
		// When this fails the device is taken already, by someone else:
		// either way it is not free.
		if exec.Command("losetup", avoid, ph).Run() == nil {
			l.held = append(l.held, avoid)
		}
	}
	out, err := exec.Command("losetup", "-f", "--show", l.Image).CombinedOutput()
	if err != nil {
		Missing(l.t, "no free loop device (losetup -f: %v %s)", err, out)
	}
	l.Dev = strings.TrimSpace(string(out))
	if l.Dev == avoid {
		l.t.Fatalf("losetup attached %s to %s again, the device it was to avoid", l.Image, l.Dev)
	}
}

// Mount mounts the attached image at dir, and removes lost+found, which
// is the file system's, not the test's.
func (l *Loop) Mount(dir string) {
	l.t.Helper()
	if out, err := exec.Command("mount", l.Dev, dir).CombinedOutput(); err != nil {
		Missing(l.t, "mount %s %s: %v %s", l.Dev, dir, err, out)
	}
	l.Dir = dir
	os.Remove(filepath.Join(dir, "lost+found"))
	if err := os.Chmod(dir, 0o755); err != nil {
		l.t.Fatal(err)
	}
}

// Unmount unmounts the image.
func (l *Loop) Unmount() {
	l.t.Helper()
	if out, err := exec.Command("umount", l.Dir).CombinedOutput(); err != nil {
		l.t.Fatalf("umount %s: %v %s", l.Dir, err, out)
	}
	l.Dir = ""
}

// Detach detaches the image from its loop device, and makes sure it is:
// a device still in use is only marked to detach at its last close, and
// the image attached again meanwhile would be mounted twice.
func (l *Loop) Detach() {
	l.t.Helper()
	if out, err := exec.Command("losetup", "-d", l.Dev).CombinedOutput(); err != nil {
		l.t.Fatalf("losetup -d %s: %v %s", l.Dev, err, out)
	}
	if _, err := os.Stat(filepath.Join("/sys/block", filepath.Base(l.Dev), "loop", "backing_file")); err == nil {
		l.t.Fatalf("%s is still attached after losetup -d: something still uses the file system on it", l.Dev)
	}
	l.Dev = ""
}

// Reattach is the disk coming back under another device number: unmounted,
// detached, attached to another loop device and mounted at dir.
func (l *Loop) Reattach(dir string) {
	l.t.Helper()
	if l.Dir != "" {
		l.Unmount()
	}
	old := l.Dev
	l.Detach()
	l.Attach(old)
	l.Mount(dir)
}

func (l *Loop) cleanup() {
	if l.Dir != "" {
		if out, err := exec.Command("umount", l.Dir).CombinedOutput(); err != nil {
			l.t.Errorf("umount %s: %v %s", l.Dir, err, out)
		}
	}
	for _, d := range append(l.held, l.Dev) {
		if d == "" {
			continue
		}
		if out, err := exec.Command("losetup", "-d", d).CombinedOutput(); err != nil {
			l.t.Errorf("losetup -d %s: %v %s", d, err, out)
		}
	}
}

var isolated sync.Map // testing.TB → true

// isolate moves the calling goroutine, locked to its thread for the rest
// of the test (the thread ends with it), into a mount namespace of its
// own, once per test. A process that makes a mount namespace (unshare, a
// container, airlock run) copies every mount of the one it starts in,
// and a copy keeps the file system alive after the test unmounts it, and
// its loop device attached: on a machine where other tests run, the image
// attached to another loop device would then be mounted twice, and
// corrupted. Only the processes the goroutine starts see the test's
// mounts, so no one else can copy them.
func isolate(t testing.TB) {
	t.Helper()
	if _, done := isolated.LoadOrStore(t, true); done {
		return
	}
	t.Cleanup(func() { isolated.Delete(t) })
	runtime.LockOSThread()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		Missing(t, "a mount namespace of the test's own (unshare CLONE_NEWNS): %v", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make the test's mount namespace private: %v", err)
	}
}
