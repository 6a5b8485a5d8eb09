package testbin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWaitFile(t *testing.T) {
	dir := t.TempDir()
	// Made by another goroutine, before or during the wait: either way
	// WaitFile returns.
	p := filepath.Join(dir, "ready")
	go os.WriteFile(p, nil, 0o600)
	if err := WaitFile(p, time.Minute, nil); err != nil {
		t.Fatalf("WaitFile for a file being made: %v", err)
	}
	// A rename into place, as a helper publishing a file whole does.
	tmp, moved := filepath.Join(dir, "tmp"), filepath.Join(dir, "moved")
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	go os.Rename(tmp, moved)
	if err := WaitFile(moved, time.Minute, nil); err != nil {
		t.Fatalf("WaitFile for a file renamed into place: %v", err)
	}

	stop := make(chan struct{})
	close(stop)
	if err := WaitFile(filepath.Join(dir, "never"), time.Minute, stop); !errors.Is(err, ErrStopped) {
		t.Errorf("WaitFile with stop closed = %v, want ErrStopped", err)
	}
	if err := WaitFile(filepath.Join(dir, "never"), 10*time.Millisecond, nil); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("WaitFile past its timeout = %v, want os.ErrDeadlineExceeded", err)
	}
	if err := WaitFile(filepath.Join(dir, "missing", "f"), time.Minute, nil); err == nil {
		t.Error("WaitFile in a missing directory succeeded")
	}
}

// TestNextTick: a same-size rewrite made after NextTick moves the file's
// mtime, which a rewrite in the same clock tick would not.
func TestNextTick(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	NextTick(t, scratch)
	if err := os.WriteFile(p, []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().After(before.ModTime()) {
		t.Errorf("mtime %v after NextTick and a rewrite, was %v", after.ModTime(), before.ModTime())
	}
	if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
		t.Errorf("NextTick left its probe: %v", ents)
	}
}
