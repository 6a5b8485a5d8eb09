package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Two commits of the same transaction at the same time: the second waits
// for the first and reports its outcome; the transaction stays committed.
func TestE2ESameTransactionCommittedTwiceAtOnce(t *testing.T) {
	x := newH(t)
	writeFile(t, filepath.Join(x.base, "f"), "a\n")
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "twice"), 0)
	staged := x.stagedPath("twice")
	writeFile(t, filepath.Join(staged, "f"), "b\n")
	writeFile(t, filepath.Join(staged, "g"), "new\n")
	pause := t.TempDir()
	first := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checked:" + pause}, args: []string{"commit", "twice"}})
	waitFile(t, filepath.Join(pause, "reached"))
	second := x.start(run{args: []string{"commit", "twice"}})
	touch(t, filepath.Join(pause, "continue"))
	r1, r2 := first.WaitSettled(), second.WaitSettled()
	wantCode(t, r1, 0)
	wantCode(t, r2, 0)
	if r1.Settle["outcome"] != "committed" || r2.Settle["outcome"] != "committed" {
		t.Fatalf("outcomes %q and %q, want committed twice (the second reporting the first)", r1.Settle["outcome"], r2.Settle["outcome"])
	}
	if r1.Settle["receipt"] != r2.Settle["receipt"] {
		t.Errorf("the two commits report different receipts")
	}
	show := x.airlock("show", "twice")
	if !strings.Contains(show.Stdout, "status:    committed") {
		t.Errorf("after two commits at once the transaction is not committed:\n%s", show.Stdout)
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != "b\n" {
		t.Errorf("f = %q", got)
	}
}

// A --receipt copy that cannot be written is a warning: the commit stands,
// exits 0, and leaves no apply in flight.
func TestE2EReceiptCopyFailureIsAWarning(t *testing.T) {
	x := newH(t)
	writeFile(t, filepath.Join(x.base, "f"), "a\n")
	r := x.airlock("run", "--workdir", x.base, "--receipt", filepath.Join(x.home, "no", "such", "dir", "r.json"), "--", "sh", "-c", "echo b > f")
	wantCode(t, r, 0)
	if r.Settle["outcome"] != "committed" || !strings.Contains(r.Stderr, "airlock: warning: --receipt") {
		t.Fatalf("want committed and a warning about --receipt: %v", r)
	}
	// Nothing is left in flight: the next transaction commits.
	wantCode(t, x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo c > f"), 0)
	if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != "c\n" {
		t.Errorf("f = %q, want c", got)
	}
}

// gc never removes the transaction whose apply is in flight, even one its
// event log already calls committed (killed after the receipt, before the
// marker was cleared): recover needs its journal.
func TestE2EGCKeepsTheApplyInFlight(t *testing.T) {
	for _, point := range []string{"applied", "recorded"} {
		t.Run(point, func(t *testing.T) {
			x := newH(t)
			writeFile(t, filepath.Join(x.base, "f"), "a\n")
			r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=" + point}, "run", "--workdir", x.base, "--id", "inflight", "--", "sh", "-c", "echo b > f")
			if r.Code != -1 {
				t.Fatalf("the fault point did not kill airlock: %v", r)
			}
			for _, args := range [][]string{{"gc", "inflight"}, {"gc"}, {"gc", "--older-than", "0"}} {
				gc := x.airlock(args...)
				if !strings.Contains(gc.Stdout, "kept inflight") {
					t.Errorf("airlock %v with the transaction in flight:\n%s\nwant it kept", args, gc.Stdout)
				}
			}
			wantCode(t, x.airlock("recover", "--workdir", x.base), 0)
			want := map[string]string{"applied": "a\n", "recorded": "b\n"}[point] // rolled back, or forward
			if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != want {
				t.Errorf("after recover f = %q, want %q", got, want)
			}
			wantCode(t, x.airlock("run", "--workdir", x.base, "--", "true"), 0)
		})
	}
}

// A mode change of a base file that has another hard link, outside the
// base, changes the base file only.
func TestE2EModeChangeOfAHardLinkedFile(t *testing.T) {
	x := newH(t)
	outside := filepath.Join(x.home, "outside")
	writeFile(t, outside, "shared\n")
	if err := os.Chmod(outside, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(x.base, "f")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, x.airlock("run", "--workdir", x.base, "--", "chmod", "755", "f"), 0)
	if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the file outside the base: %v %v, want it still 0644", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(x.base, "f")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("base f: %v %v, want 0755", fi.Mode(), err)
	}
}
