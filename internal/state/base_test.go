package state

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func newBase(t *testing.T) (*Store, *Base) {
	t.Helper()
	s := openStore(t)
	b, err := s.Base(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

func TestBaseDir(t *testing.T) {
	s := openStore(t)
	base := t.TempDir()
	b, err := s.Base(base)
	if err != nil {
		t.Fatal(err)
	}
	id, err := Identify(base)
	if err != nil {
		t.Fatal(err)
	}
	if b.Dir() != filepath.Join(s.Dir(), "bases", id.Key()) || !isKey(filepath.Base(b.Dir())) || b.Path() != base {
		t.Fatalf("base dir %s for %s", b.Dir(), base)
	}
	var rec struct {
		Path          string
		FS            string
		Device, Inode uint64
	}
	data, err := os.ReadFile(filepath.Join(b.Dir(), "base.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	syscall.Stat(base, &st)
	if rec.Path != base || rec.Inode != st.Ino || rec.Inode == 0 || rec.FS != id.FS || rec.Device != uint64(st.Dev) {
		t.Fatalf("base.json = %+v, want path %s inode %d", rec, base, st.Ino)
	}
	again, err := s.Base(base + "/")
	if err != nil || again.Dir() != b.Dir() {
		t.Fatalf("same base, other spelling: %v %v", again, err)
	}
	if _, err := s.Base("relative"); err == nil {
		t.Fatal("Base accepted a relative path")
	}
	if _, err := s.Base(filepath.Join(base, "missing")); err == nil {
		t.Fatal("Base accepted a missing directory")
	}
}

func TestInflightAndHead(t *testing.T) {
	_, b := newBase(t)
	if id, ok, err := b.Inflight(); err != nil || ok || id != "" {
		t.Fatalf("Inflight of a new base = %q %v %v", id, ok, err)
	}
	if err := b.SetInflight("tx-1"); err != nil {
		t.Fatal(err)
	}
	if id, ok, err := b.Inflight(); err != nil || !ok || id != "tx-1" {
		t.Fatalf("Inflight = %q %v %v", id, ok, err)
	}
	if err := b.SetInflight("../x"); err == nil {
		t.Fatal("SetInflight accepted an invalid id")
	}
	if err := b.ClearInflight(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.Inflight(); err != nil || ok {
		t.Fatalf("Inflight after clear = %v %v", ok, err)
	}
	if err := b.ClearInflight(); err != nil {
		t.Fatalf("clearing twice: %v", err)
	}

	if h, err := b.Head(); err != nil || h != "" {
		t.Fatalf("Head of a new base = %q %v", h, err)
	}
	for _, d := range []string{"sha256:aa", "sha256:bb"} {
		if err := b.SetHead(d); err != nil {
			t.Fatal(err)
		}
		if h, err := b.Head(); err != nil || h != d {
			t.Fatalf("Head = %q %v, want %s", h, err, d)
		}
	}
	if err := b.SetHead("a b"); err == nil {
		t.Fatal("SetHead accepted a digest with a space")
	}
	fi, err := os.Stat(filepath.Join(b.Dir(), "head"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("head: %v %v", fi, err)
	}
}

func TestBaseStateRefusals(t *testing.T) {
	_, b := newBase(t)
	path := filepath.Join(b.Dir(), "inflight")
	os.WriteFile(path, []byte("../../etc\n"), 0o600)
	_, _, err := b.Inflight()
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != path {
		t.Fatalf("Inflight with a bad id = %v, want *CorruptError naming %s", err, path)
	}
	os.Remove(path)
	if err := os.Symlink(filepath.Join(t.TempDir(), "x"), path); err != nil {
		t.Fatal(err)
	}
	_, _, err = b.Inflight()
	wantUnsafe(t, err, path)

	head := filepath.Join(b.Dir(), "head")
	os.WriteFile(head, []byte("sha256:aa"), 0o600) // torn: no newline
	if _, err := b.Head(); !errors.As(err, &ce) {
		t.Fatalf("Head without newline = %v, want *CorruptError", err)
	}

	lock := filepath.Join(b.Dir(), "lock")
	if err := syscall.Mkfifo(lock, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = b.Lock(t.Context())
	wantUnsafe(t, err, lock)

	os.Chmod(b.Dir(), 0o777)
	_, err = b.Lock(t.Context())
	wantUnsafe(t, err, b.Dir())
}

func TestLockExcludesInProcessAndHonoursContext(t *testing.T) {
	_, b := newBase(t)
	unlock, err := b.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The second Lock waits (it does not fail at once while the lock is
	// held), and ends when its context does. The cancel may come before or
	// while it waits: either way it must return context.Canceled, and
	// return at all, which is bounded far past any load.
	wantLockTimeout(t, b.Lock)
	ctx, cancel := context.WithCancel(t.Context())
	locked := make(chan error, 1)
	go func() {
		_, err := b.Lock(ctx)
		locked <- err
	}()
	cancel()
	select {
	case err = <-locked:
	case <-time.After(time.Minute):
		t.Fatal("a Lock whose context was cancelled still waits a minute later")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("second Lock = %v, want context.Canceled", err)
	}
	unlock()
	unlock() // idempotent
	unlock2, err := b.Lock(t.Context())
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	unlock2()

	done, cancelDone := context.WithCancel(t.Context())
	cancelDone()
	if _, err := b.Lock(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a done context = %v", err)
	}
}

// TestHelperProcess is not a test: the lock tests run the test binary as a
// child that takes a lock and holds it until told to stop or killed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("AIRLOCK_STATE_HELPER") != "lock" {
		t.Skip("helper process")
	}
	s, err := Open(os.Getenv("AIRLOCK_STATE_HELPER_DIR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var unlock func()
	if base := os.Getenv("AIRLOCK_STATE_HELPER_BASE"); base != "" {
		b, err := s.Base(base)
		if err == nil {
			unlock, err = b.Lock(context.Background())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	} else if unlock, err = s.LockGlobal(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n') // hold until stdin closes
	unlock()
	os.Exit(0)
}

// startHolder runs a child process that holds the base lock (or, with base
// "", the global lock) and returns once it holds it.
func startHolder(t *testing.T, s *Store, base string) (cmd *exec.Cmd, release func()) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_HELPER=lock", "AIRLOCK_STATE_HELPER_DIR="+s.Dir(), "AIRLOCK_STATE_HELPER_BASE="+base)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper did not take the lock: %q %v", line, err)
	}
	return cmd, func() { stdin.Close() }
}

func wantLockTimeout(t *testing.T, lock func(context.Context) (func(), error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if unlock, err := lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			unlock()
		}
		t.Fatalf("Lock while another process holds it = %v, want context.DeadlineExceeded", err)
	}
}

func TestLockAcrossProcesses(t *testing.T) {
	s, b := newBase(t)
	cmd, release := startHolder(t, s, b.Path())
	wantLockTimeout(t, b.Lock)
	// Another base's lock is independent.
	other, err := s.Base(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u, err := other.Lock(t.Context())
	if err != nil {
		t.Fatalf("lock of another base: %v", err)
	}
	u()
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	unlock, err := b.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock after the holder exited: %v", err)
	}
	unlock()
}

// A holder that dies without unlocking (a crashed commit) must not leave
// the lock held.
func TestLockReleasedWhenHolderIsKilled(t *testing.T) {
	s, b := newBase(t)
	cmd, _ := startHolder(t, s, b.Path())
	wantLockTimeout(t, b.Lock)
	cmd.Process.Kill()
	cmd.Wait()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	unlock, err := b.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	unlock()
}

func TestGlobalLockAcrossProcesses(t *testing.T) {
	s := openStore(t)
	cmd, release := startHolder(t, s, "")
	wantLockTimeout(t, s.LockGlobal)
	release()
	cmd.Wait()
	unlock, err := s.LockGlobal(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}
