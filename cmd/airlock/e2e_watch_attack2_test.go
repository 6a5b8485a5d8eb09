//go:build linux

package main_test

// Attacks on the watch of a run, second round: each test is a change to
// the staged tree that no inotify event names, checked watched (which
// fails where the guarantee breaks) and, as the control that passes,
// walked (AIRLOCK_NO_WATCH=1). The guarantee: a watched run commits
// exactly what a walk would, and the manifest it records for the pool
// equals the tree.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/testbin"
)

// The file_getattr(2) and file_setattr(2) system calls (Linux 6.17; one
// number on every architecture), and struct file_attr.
const (
	sysFileGetattr = 468
	sysFileSetattr = 469
	xflagNodump    = 0x80 // FS_XFLAG_NODUMP
)

type fileAttr struct {
	xflags                                uint64
	extsize, nextents, projid, cowextsize uint32
}

// fileSetattrNodump sets the nodump flag of path by path, with
// file_setattr(2): no open of the file (so no IN_OPEN), and the kernel
// reports no fsnotify event for a change of a file's flags (nor does
// FS_IOC_SETFLAGS), though it moves the file's ctime.
func fileSetattrNodump(path string) error {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	cwd := unix.AT_FDCWD
	atFDCWD := uintptr(cwd)
	var fa fileAttr
	if _, _, e := unix.Syscall6(sysFileGetattr, atFDCWD, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&fa)), unsafe.Sizeof(fa), 0, 0); e != 0 {
		return fmt.Errorf("file_getattr %s: %w", path, e)
	}
	fa.xflags |= xflagNodump
	if _, _, e := unix.Syscall6(sysFileSetattr, atFDCWD, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&fa)), unsafe.Sizeof(fa), 0, 0); e != 0 {
		return fmt.Errorf("file_setattr %s: %w", path, e)
	}
	return nil
}

// giveFD opens path for writing and hands the descriptor to whoever
// listens on the abstract unix socket sock, then waits for the word it
// arrived.
func giveFD(path, sock string) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: "@" + sock}); err != nil {
		return fmt.Errorf("connect @%s: %w", sock, err)
	}
	if err := unix.Sendmsg(s, []byte("f"), unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("send the descriptor: %w", err)
	}
	if _, _, err := unix.Recvfrom(s, make([]byte, 1), 0); err != nil {
		return fmt.Errorf("wait for the holder: %w", err)
	}
	return nil
}

// takeFD listens on a fresh abstract unix socket for one process to hand
// it one descriptor, which it answers and sends on the channel (closed
// when the test ends). It returns the socket's name.
func takeFD(t *testing.T) (string, <-chan int) {
	t.Helper()
	name := fmt.Sprintf("airlock-watch-attack2-%d-%s", os.Getpid(), filepath.Base(testbin.RealDir(t)))
	l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(l, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(l, 1); err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	t.Cleanup(func() { unix.Close(l) })
	go func() {
		c, _, err := unix.Accept(l)
		if err != nil {
			return
		}
		defer unix.Close(c)
		oob := make([]byte, unix.CmsgSpace(4))
		_, oobn, _, _, err := unix.Recvmsg(c, make([]byte, 1), oob, 0)
		if err == nil {
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
				if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
					got <- fds[0]
				}
			}
		}
		unix.Write(c, []byte("k"))
	}()
	return name, got
}

// pooledPaths are the paths rel of the pooled trees of x's state root.
func (x *h) pooledPaths(rel string) []string {
	m, _ := filepath.Glob(filepath.Join(x.state, "bases", "*", "pool", "*", "tree", filepath.FromSlash(rel)))
	return m
}

// TestE2EWatchAttack2SetattrRecord: file_setattr(2) changes a file's
// flags by path, with no open and no fsnotify event, and moves its ctime.
// The watched run's manifest keeps a's ctime from open, so the record it
// pools is not the tree: the next run's proof of the pooled tree finds a
// "changed" and deletes the tree instead of recycling it. (The change set
// is right: flags are not content.) A walk records the tree as it is,
// and the next run recycles it.
func TestE2EWatchAttack2SetattrRecord(t *testing.T) {
	probe := filepath.Join(testbin.RealDir(t), "probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fileSetattrNodump(probe); errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTTY) {
		t.Skipf("file_setattr here: %v", err)
	}
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a": F(0o644, "orig\n")})
			id1 := x.recycledRun("a")
			var env []string
			if walk {
				env = []string{"AIRLOCK_NO_WATCH=1"}
			}
			if !walk {
				// The guard: a watched command has no file_setattr, and
				// sets flags through an open file (which the watch sees).
				x.watchedRefuses(attackCommand(t, "setattr", "a"), "function not implemented")
				return
			}
			r2, j2 := x.runJSON(env, "echo two > two.txt && "+attackCommand(t, "setattr", "a"))
			wantCode(t, r2, 0)
			if j2.Outcome != "committed" {
				t.Fatalf("second run: %+v, want committed\n%s", j2, r2.Stderr)
			}
			if s := x.showRecycle(r2.Settle["tx"]); s.Recycled == nil || s.Recycled.From != id1 {
				t.Logf("the second run did not recycle %s (recycled %+v, not_recycled %q)", id1, s.Recycled, s.NotRecycled)
			}
			r3, j3 := x.runJSON(env, "echo three > three.txt")
			wantCode(t, r3, 0)
			if s := x.showRecycle(r3.Settle["tx"]); s.Recycled == nil || s.Recycled.From != r2.Settle["tx"] {
				t.Errorf("the run after a watched run that set a's flags did not recycle its tree (measured %q then %q): recycled %+v, not_recycled %q; the pooled record is not the tree",
					j2.Measured, j3.Measured, s.Recycled, s.NotRecycled)
			}
		})
	}
}

// TestE2EWatchAttack2RefreshedRecord: a watched run's record keeps every
// entry the watch did not name as the open measured it, so for a recycled
// tree the open's manifest (what Refresh says it made of the pooled tree)
// must be the tree exactly. Here the base changes between runs (a file
// added, one rewritten, one removed, in a directory and at the top), the
// second run recycles the first run's tree and writes elsewhere, and the
// third must recycle the second's: its pooled record must be the tree.
func TestE2EWatchAttack2RefreshedRecord(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "watched", true: "walked"}[walk], func(t *testing.T) {
			x := newH(t)
			build(t, x.base, tree{"a": F(0o644, "orig\n"), "d/f": F(0o644, "f\n"), "d/g": F(0o644, "g\n"), "e/h": F(0o644, "h\n")})
			id1 := x.recycledRun("a", "d/f")
			build(t, x.base, tree{"d/new": F(0o644, "new\n"), "d/f": F(0o600, "f changed\n"), "top": F(0o644, "top\n")})
			if err := os.Remove(filepath.Join(x.base, "e", "h")); err != nil {
				t.Fatal(err)
			}
			var env []string
			if walk {
				env = []string{"AIRLOCK_NO_WATCH=1"}
			}
			r2, j2 := x.runJSON(env, "echo two > two.txt")
			wantCode(t, r2, 0)
			if !walk {
				needWatch(t, j2)
			}
			if s := x.showRecycle(r2.Settle["tx"]); s.Recycled == nil || s.Recycled.From != id1 {
				t.Fatalf("the second run did not recycle %s (recycled %+v, not_recycled %q): the test needs it", id1, s.Recycled, s.NotRecycled)
			}
			r3, j3 := x.runJSON(env, "echo three > three.txt")
			wantCode(t, r3, 0)
			if s := x.showRecycle(r3.Settle["tx"]); s.Recycled == nil || s.Recycled.From != r2.Settle["tx"] {
				t.Errorf("the run after a recycled run did not recycle its tree (measured %q then %q): recycled %+v, not_recycled %q; the pooled record is not the tree",
					j2.Measured, j3.Measured, s.Recycled, s.NotRecycled)
			}
		})
	}
}
