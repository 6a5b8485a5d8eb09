package torture

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// mountSmall mounts a small file system at dir: a tmpfs of size bytes, or
// an ext4 image of that size on a loop device. It skips when this machine
// cannot mount (not root, no loop devices).
func mountSmall(t *testing.T, dir, fstype string, size int64) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system needs root")
	}
	var out []byte
	var err error
	switch fstype {
	case "tmpfs":
		out, err = exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "tmpfs", dir).CombinedOutput()
	case "ext4":
		img := filepath.Join(t.TempDir(), "fs.img")
		f, ferr := os.Create(img)
		check(t, ferr)
		check(t, f.Truncate(size))
		f.Close()
		if out, err = exec.Command("mkfs.ext4", "-q", "-m", "0", img).CombinedOutput(); err != nil {
			testbin.Missing(t, "mkfs.ext4 (e2fsprogs): %v %s", err, out)
		}
		out, err = exec.Command("mount", "-o", "loop", img, dir).CombinedOutput()
	}
	if err != nil {
		testbin.Missing(t, "cannot mount a %s here (loop devices?): %v %s", fstype, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	// lost+found is the file system's, not the test's.
	os.Remove(filepath.Join(dir, "lost+found"))
	check(t, os.Chmod(dir, 0o755))
}

// TestDiskFull commits a change set into a base on a small file system
// that runs out of space part-way through the apply: the commit must refuse
// with ApplyFailed and leave the base exactly as it was.
func TestDiskFull(t *testing.T) {
	for _, fstype := range []string{"tmpfs", "ext4"} {
		t.Run(fstype, func(t *testing.T) {
			w := newWorld(t)
			mountSmall(t, w.base, fstype, 4<<20)
			before := tree{".": {Kind: kDir, Mode: 0o755}, "d": {Kind: kDir, Mode: 0o755}}
			for i := range 8 {
				before[fmt.Sprintf("d/f%d", i)] = node{Kind: kFile, Mode: 0o644, Data: strings.Repeat(fmt.Sprint(i), 200<<10)}
			}
			before["small"] = node{Kind: kFile, Mode: 0o644, Data: "small\n"}
			materialize(t, w.base, before)
			staged := w.open("full")
			after := before.clone()
			// Each new file is written beside the old one before it
			// replaces it: the space runs out after a few of them.
			for i := range 8 {
				after[fmt.Sprintf("d/f%d", i)] = node{Kind: kFile, Mode: 0o644, Data: strings.Repeat("n", 600<<10)}
			}
			after["small"] = node{Kind: kFile, Mode: 0o600, Data: "changed\n"}
			after["new"] = node{Kind: kDir, Mode: 0o755}
			after["new/file"] = node{Kind: kFile, Mode: 0o644, Data: "new\n"}
			materialize(t, staged, after)
			// Large files are compared by digest: take both trees as
			// snapshot measures them.
			before, after = snapshot(t, w.base), snapshot(t, staged)
			r := w.airlock("commit", "full")
			wantRefusal(t, r, "ApplyFailed")
			if !strings.Contains(r.Stderr, "no space") {
				t.Errorf("the refusal does not say the disk was full: %v", r)
			}
			if got := w.beforeOrAfter(before, after); got != "before" {
				t.Fatalf("the base is %s, want before", got)
			}
			if s := w.status("full"); s != "refused" {
				t.Fatalf("the transaction is %s, want refused (kept, to be committed again)", s)
			}
		})
	}
}

// TestPermissionErrorOnNthFile makes one path of the change set, in the
// middle of the apply order, impossible to write: an immutable file
// (chattr +i), and a subdirectory bind-mounted read-only. The commit must
// refuse with ApplyFailed, the base exactly as before.
func TestPermissionErrorOnNthFile(t *testing.T) {
	setups := map[string]func(t *testing.T, base string){
		"immutable-file": func(t *testing.T, base string) {
			f := filepath.Join(base, "m", "f5")
			if out, err := exec.Command("chattr", "+i", f).CombinedOutput(); err != nil {
				testbin.Missing(t, "chattr +i: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("chattr", "-i", f).Run() })
		},
		"read-only-bind-mount": func(t *testing.T, base string) {
			d := filepath.Join(base, "m", "sub")
			if out, err := exec.Command("mount", "--bind", d, d).CombinedOutput(); err != nil {
				testbin.Missing(t, "bind mount: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", d).Run() })
			if out, err := exec.Command("mount", "-o", "remount,ro,bind", d).CombinedOutput(); err != nil {
				testbin.Missing(t, "read-only remount: %v %s", err, out)
			}
		},
	}
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			if os.Geteuid() != 0 {
				t.Skip("needs root")
			}
			w := newWorld(t)
			before := tree{".": {Kind: kDir, Mode: 0o755}, "m": {Kind: kDir, Mode: 0o755}, "m/sub": {Kind: kDir, Mode: 0o755}, "m/sub/x": {Kind: kFile, Mode: 0o644, Data: "x"}}
			for i := range 10 {
				before[fmt.Sprintf("m/f%d", i)] = node{Kind: kFile, Mode: 0o644, Data: fmt.Sprintf("old %d\n", i)}
			}
			materialize(t, w.base, before)
			// Set up before open: chattr moves the file's ctime, which
			// airlock would rightly call drift.
			setup(t, w.base)
			staged := w.open("perm")
			after := before.clone()
			for i := range 10 {
				after[fmt.Sprintf("m/f%d", i)] = node{Kind: kFile, Mode: 0o644, Data: fmt.Sprintf("new %d\n", i)}
			}
			after["m/sub/x"] = node{Kind: kFile, Mode: 0o644, Data: "new x"}
			after["m/sub/y"] = node{Kind: kFile, Mode: 0o644, Data: "new y"}
			delete(after, "m/f9")
			materialize(t, staged, after)
			r := w.airlock("commit", "perm")
			wantRefusal(t, r, "ApplyFailed")
			if got := w.beforeOrAfter(before, after); got != "before" {
				t.Fatalf("the base is %s, want before", got)
			}
			// The cause fixed, the kept transaction commits.
			if name == "immutable-file" {
				check(t, exec.Command("chattr", "-i", filepath.Join(w.base, "m", "f5")).Run())
			} else {
				check(t, exec.Command("umount", filepath.Join(w.base, "m", "sub")).Run())
			}
			r = w.airlock("commit", "perm")
			if name == "immutable-file" && r.Code == 75 && r.Settle["refusal"] == "BaseDrift" && r.Settle["refused_paths"] == "m/f5" {
				// chattr -i moved the file's ctime: by its stat, the file
				// changed since open, though its bytes did not.
				t.Logf("after chattr -i the kept transaction is refused BaseDrift on m/f5 (its ctime moved); a new transaction is needed")
				return
			}
			if r.Code != 0 {
				t.Fatalf("the kept transaction does not commit once the cause is fixed: %v", r)
			}
			if got := w.beforeOrAfter(before, after); got != "after" {
				t.Fatalf("the base is %s, want after", got)
			}
		})
	}
}

// TestSparseFileOnANearlyFullDisk commits and undoes a one-byte edit of a
// 256 MiB sparse file whose base and state share a 64 MiB file system, as
// `cp --sparse` fits it there: every copy airlock makes keeps the holes,
// so the commit needs a few KiB, not several times the file's size.
func TestSparseFileOnANearlyFullDisk(t *testing.T) {
	for _, fstype := range []string{"tmpfs", "ext4"} {
		t.Run(fstype, func(t *testing.T) {
			mnt := t.TempDir()
			mountSmall(t, mnt, fstype, 64<<20)
			w := newWorldIn(t, mnt)
			img := filepath.Join(w.base, "img")
			f, err := os.Create(img)
			check(t, err)
			const size = 256 << 20
			for _, off := range []int64{0, 100 << 20, size - 4096} {
				_, err := f.WriteAt([]byte(strings.Repeat(fmt.Sprint(off%10), 4096)), off)
				check(t, err)
			}
			check(t, f.Truncate(size))
			check(t, f.Close())
			// The oracles live on the big disk, copied by cp.
			ref := t.TempDir()
			sparseCopy := func(from, to string) {
				t.Helper()
				if out, err := exec.Command("cp", "--sparse=always", from, to).CombinedOutput(); err != nil {
					t.Fatalf("cp --sparse=always: %v\n%s", err, out)
				}
			}
			before, after := filepath.Join(ref, "before"), filepath.Join(ref, "after")
			sparseCopy(img, before)
			staged := w.open("s1")
			sf, err := os.OpenFile(filepath.Join(staged, "img"), os.O_WRONLY, 0)
			check(t, err)
			_, err = sf.WriteAt([]byte("x"), 200<<20)
			check(t, err)
			check(t, sf.Close())
			sparseCopy(filepath.Join(staged, "img"), after)
			w.must("commit", "s1")
			sameFile(t, "the base after the commit", img, after)
			wantSparse(t, "the base's file after the commit", img)
			wantSparse(t, "the state after the commit", w.state)
			w.must("undo", "s1", "--workdir", w.base)
			sameFile(t, "the base after undo", img, before)
			wantSparse(t, "the base's file after undo", img)
		})
	}
}

// sameFile fails unless the files a and b hold the same bytes (cmp(1)).
func sameFile(t *testing.T, what, a, b string) {
	t.Helper()
	if out, err := exec.Command("cmp", a, b).CombinedOutput(); err != nil {
		t.Errorf("%s: %s differs from %s: %v\n%s", what, a, b, err, out)
	}
}
