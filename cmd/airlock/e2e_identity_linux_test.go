package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// A base's identity survives its disk coming back under another device
// number (a reboot; a USB disk, an LVM volume, a loop device attached
// again): these tests crash a commit half-way into a base on an ext4
// image, attach the image to another loop device, and mount it again.

// mkfsExt4 makes the images (quiet, over an existing file).
var mkfsExt4 = []string{"mkfs.ext4", "-q", "-F"}

// crashOnImage mounts an ext4 image at a fresh directory, makes it the
// scenario's base, commits one transaction (r1: the base's history) and
// opens two more (t0 and t2: commits still to come), then kills t1's
// commit half-way. It returns the image, the base before t1 and as t1
// left it.
func crashOnImage(t *testing.T) (x *h, img *testbin.Loop, before, half tree) {
	x = newH(t)
	img = testbin.NewLoop(t, mkfsExt4, 32<<20, x.base)
	wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "r1", "--", "sh", "-c", "echo history > h"), 0)
	for _, id := range []string{"t0", "t2"} {
		writeFile(t, filepath.Join(x.openTx(id), id), id+"'s\n")
	}
	x.sixFiles("t1")
	before = snapshot(t, x.base, nil)
	x.killMidApply("t1")
	half = snapshot(t, x.base, nil)
	return x, img, before, half
}

// devOf is the device number stat reports for path.
func devOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Stat(path, &st))
	return uint64(st.Dev)
}

// wantRefusesInterrupted checks that open and run over dir, and (with
// commit) the commit of t2, opened over it before the crash, refuse
// InterruptedApply naming t1, and leave dir as it was.
func (x *h) wantRefusesInterrupted(dir string, commit bool) {
	x.t.Helper()
	was := snapshot(x.t, dir, nil)
	for _, args := range [][]string{
		{"open", "--workdir", dir},
		{"run", "--workdir", dir, "--", "sh", "-c", "echo new > g"},
	} {
		r := x.airlock(args...)
		if r.Code != 75 || !strings.Contains(r.Stderr, "InterruptedApply") || !strings.Contains(r.Stderr, "t1") {
			x.t.Errorf("%v over %s, whose apply of t1 was interrupted, does not refuse InterruptedApply naming t1:\n%s", args[0], dir, r)
		}
	}
	if commit {
		r := x.airlock("commit", "t2")
		wantCode(x.t, r, 75)
		wantBlock(x.t, r, map[string]string{"refusal": "InterruptedApply"})
	}
	wantTree(x.t, "the base after work was refused", was, snapshot(x.t, dir, nil))
}

// wantHistory checks that log over dir still lists r1, committed before
// the crash.
func (x *h) wantHistory(dir string) {
	x.t.Helper()
	r := x.airlock("log", "--workdir", dir, "--json")
	wantCode(x.t, r, 0)
	if !strings.Contains(r.Stdout, `"tx": "r1"`) {
		x.t.Errorf("log over %s lost the base's history (r1, committed before the crash):\n%s", dir, r)
	}
}

// TestE2EDiskBackUnderAnotherDeviceNumber (issue 18, 3): after a crash
// mid-apply the disk comes back under another device number, at the same
// path. open, run and commit refuse InterruptedApply; recover, with no
// flag, finds the apply and restores the exact prior base; log still
// lists the base's history.
func TestE2EDiskBackUnderAnotherDeviceNumber(t *testing.T) {
	x, img, before, half := crashOnImage(t)
	dev := devOf(t, x.base)
	img.Reattach(x.base)
	if devOf(t, x.base) == dev {
		t.Fatalf("the image came back under the same device number %#x", dev)
	}
	wantTree(t, "the base back under another device number", half, snapshot(t, x.base, nil))

	x.wantRefusesInterrupted(x.base, true)
	r := x.airlock("recover", "--workdir", x.base)
	wantCode(t, r, 0)
	if strings.Contains(r.Stderr, "nothing to recover") || !strings.Contains(r.Stderr, "t1") {
		t.Fatalf("recover does not find t1's apply on the disk back under another device number:\n%s", r)
	}
	wantTree(t, "the base after recover", before, snapshot(t, x.base, nil))
	x.wantHistory(x.base)
	// A transaction opened before the crash is over the same directory:
	// its commit lands, whatever device number the disk has now.
	r = x.airlock("commit", "t0")
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "committed"})
	wantCode(t, x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo new > g"), 0)
	x.wantHistory(x.base)
}

// TestE2EDiskBackElsewhere: the disk comes back under another device
// number and at another path. Its identity alone finds the apply there
// (open refuses naming the path it was made over; recover acts only when
// told it is that base, as for a moved base), and the old path, an empty
// mount point now, is refused too: the apply names it.
func TestE2EDiskBackElsewhere(t *testing.T) {
	x, img, before, half := crashOnImage(t)
	dev := devOf(t, x.base)
	elsewhere := testbin.RealDir(t)
	img.Reattach(elsewhere)
	if devOf(t, elsewhere) == dev {
		t.Fatalf("the image came back under the same device number %#x", dev)
	}

	x.wantRefusesInterrupted(elsewhere, false)
	if r := x.airlock("open", "--workdir", elsewhere); !strings.Contains(r.Stderr, x.base) {
		t.Errorf("open at the disk's new path does not say the apply was made over %s:\n%s", x.base, r)
	}
	// The old path is the empty directory the disk was mounted on.
	x.wantRefusesInterrupted(x.base, true)
	r := x.airlock("recover", "--workdir", x.base)
	wantCode(t, r, 125)
	if !strings.Contains(r.Stderr, "t1") || !strings.Contains(r.Stderr, "not mounted") {
		t.Errorf("recover at the empty mount point does not name t1 and the disk that may not be mounted:\n%s", r)
	}

	r = x.airlock("recover", "--workdir", elsewhere)
	wantCode(t, r, 125)
	if !strings.Contains(r.Stderr, "--moved") || !strings.Contains(r.Stderr, x.base) {
		t.Errorf("recover at the disk's new path does not say where the apply was made and how to confirm:\n%s", r)
	}
	wantTree(t, "the base after an unconfirmed recover", half, snapshot(t, elsewhere, nil))
	r = x.airlock("recover", "--workdir", elsewhere, "--moved")
	wantCode(t, r, 0)
	wantTree(t, "the base after recover --moved", before, snapshot(t, elsewhere, nil))
	x.wantHistory(elsewhere)
	for _, dir := range []string{x.base, elsewhere} {
		wantCode(t, x.airlock("run", "--workdir", dir, "--", "sh", "-c", "echo new > g"), 0)
	}
}

// TestE2EInflightFoundByPathAlone: state an earlier version kept under the
// base's device and inode, marking an apply in flight, after the disk came
// back under another device number. Nothing but the path can find it, and
// the identity it records cannot be matched (the same inode under another
// device number): open refuses, recover does nothing until told the
// directory is that base, then rolls it back.
func TestE2EInflightFoundByPathAlone(t *testing.T) {
	x, img, before, half := crashOnImage(t)
	// Make the state what an earlier version left: named by device and
	// inode, base.json without the file system's identity, no index.
	dirs, _ := filepath.Glob(filepath.Join(x.state, "bases", "*", "base.json"))
	if len(dirs) != 1 {
		t.Fatalf("base state directories: %v", dirs)
	}
	dirs[0] = filepath.Dir(dirs[0])
	var rec map[string]any
	must(t, json.Unmarshal([]byte(testbin.ReadFile(t, filepath.Join(dirs[0], "base.json"))), &rec))
	delete(rec, "fs")
	data, _ := json.Marshal(rec)
	must(t, os.WriteFile(filepath.Join(dirs[0], "base.json"), data, 0o600))
	var st syscall.Stat_t
	must(t, syscall.Stat(x.base, &st))
	if legacy := filepath.Join(x.state, "bases", devInoKey(uint64(st.Dev), st.Ino)); legacy != dirs[0] {
		must(t, os.Rename(dirs[0], legacy))
	}
	must(t, os.RemoveAll(filepath.Join(x.state, "inflight")))
	img.Reattach(x.base)

	x.wantRefusesInterrupted(x.base, false)
	r := x.airlock("recover", "--workdir", x.base)
	wantCode(t, r, 125)
	if !strings.Contains(r.Stderr, "t1") || !strings.Contains(r.Stderr, "--moved") {
		t.Errorf("recover of an apply found by path alone does not name it and how to confirm:\n%s", r)
	}
	wantTree(t, "the base after an unconfirmed recover", half, snapshot(t, x.base, nil))
	r = x.airlock("recover", "--workdir", x.base, "--moved")
	wantCode(t, r, 0)
	wantTree(t, "the base after recover --moved", before, snapshot(t, x.base, nil))
	wantCode(t, x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo new > g"), 0)
}

// devInoKey is the name earlier versions gave a base's state directory.
func devInoKey(dev, ino uint64) string { return fmt.Sprintf("%016x%016x", dev, ino) }
