package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// gc named a transaction whose `open` process had exited while its commit
// was running, and removed it: the commit failed, its rollback failed, and
// the base stayed marked in flight for a transaction with no state. gc
// must keep a transaction that is being settled, say why, and not wait for
// it; the commit then finishes.
func TestE2EGCDuringCommitKeepsTheTransaction(t *testing.T) {
	for _, point := range []string{"checked", "journal-synced"} {
		t.Run(point, func(t *testing.T) {
			x := newH(t)
			writeFile(t, filepath.Join(x.base, "f"), "a\n")
			staged := x.openTx("busy") // its owner, airlock open, has exited
			writeFile(t, filepath.Join(staged, "f"), "b\n")
			writeFile(t, filepath.Join(staged, "g"), "new\n")
			pause := t.TempDir()
			commit := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=" + point + ":" + pause}, args: []string{"commit", "busy"}})
			waitFile(t, filepath.Join(pause, "reached"))

			for _, args := range [][]string{{"gc", "busy"}, {"gc"}, {"gc", "--dry-run", "busy"}} {
				r := x.airlock(args...)
				wantCode(t, r, 0)
				if !strings.Contains(r.Stdout, "kept busy") {
					t.Errorf("airlock %v during the commit of busy does not keep it:\n%s", args, r)
				}
				if !testbin.Exists(filepath.Join(x.state, "tx", "busy", "open.json")) {
					t.Fatalf("airlock %v removed the state of busy while its commit was running:\n%s", args, r)
				}
			}
			// Named, with its owner gone, busy would be removed if it were
			// not being settled: gc says that it is.
			if r := x.airlock("gc", "busy"); point == "checked" && !strings.Contains(r.Stdout, "settling it right now") {
				t.Errorf("gc does not say busy is being settled:\n%s", r)
			}

			touch(t, filepath.Join(pause, "continue"))
			r := commit.WaitSettled()
			wantCode(t, r, 0)
			wantBlock(t, r, map[string]string{"outcome": "committed"})
			if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != "b\n" {
				t.Errorf("f = %q after the commit, want b", got)
			}
			// Settled now: gc removes it, and the base takes new work.
			r = x.airlock("gc", "busy")
			wantCode(t, r, 0)
			if testbin.Exists(filepath.Join(x.state, "tx", "busy")) {
				t.Errorf("gc busy after its commit kept it:\n%s", r)
			}
			wantCode(t, x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo c > f"), 0)
		})
	}
}

// A base marked in flight for a transaction whose state is gone (what the
// gc above used to leave) must be recoverable by recover itself: it checks
// what can still be known, removes the apply's leftovers, clears the
// marker and says so; open, gc and commit work again.
func TestE2ERecoverDanglingInflightMarker(t *testing.T) {
	for _, tc := range []struct {
		point string
		f     string // f after recover: the apply never began, or was recorded
		says  string
	}{
		{"journal-synced", "a\n", "no receipt records the commit"},
		{"recorded", "b\n", "its commit had been recorded"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			x := newH(t)
			must(t, os.Mkdir(filepath.Join(x.base, "sub"), 0o755))
			writeFile(t, filepath.Join(x.base, "f"), "a\n")
			writeFile(t, filepath.Join(x.base, "sub", ".airlock-other-1"), "not ours\n")
			r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=" + tc.point}, "run", "--workdir", x.base, "--id", "gone", "--", "sh", "-c", "echo b > f")
			if r.Code != -1 {
				t.Fatalf("the fault point did not kill airlock: %v", r)
			}
			// The state of the transaction disappears while the base
			// still marks it in flight, and its apply left a temporary file.
			must(t, os.RemoveAll(filepath.Join(x.state, "tx", "gone")))
			leftover := filepath.Join(x.base, "sub", ".airlock-gone-0123456789ab")
			writeFile(t, leftover, "half written\n")

			r = x.airlock("open", "--workdir", x.base)
			if wantCode(t, r, 75); !strings.Contains(r.Stderr, "recover") {
				t.Fatalf("open over the wedged base does not point to recover:\n%s", r)
			}
			r = x.airlock("recover", "--workdir", x.base)
			wantCode(t, r, 0)
			for _, w := range []string{"gone", "journal is gone", tc.says, "removed " + leftover, "cleared the in-flight marker"} {
				if !strings.Contains(r.Stderr, w) {
					t.Errorf("recover does not say %q:\n%s", w, r)
				}
			}
			if testbin.Exists(leftover) {
				t.Errorf("recover left %s", leftover)
			}
			if !testbin.Exists(filepath.Join(x.base, "sub", ".airlock-other-1")) {
				t.Errorf("recover removed a file that is not a leftover of gone")
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != tc.f {
				t.Errorf("f = %q after recover, want %q", got, tc.f)
			}
			r = x.airlock("recover", "--workdir", x.base)
			wantCode(t, r, 0)
			if !strings.Contains(r.Stderr, "nothing to recover") {
				t.Errorf("a second recover:\n%s", r)
			}
			wantCode(t, x.airlock("gc"), 0)
			r = x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo c > f")
			wantCode(t, r, 0)
			wantBlock(t, r, map[string]string{"outcome": "committed"})
			if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != "c\n" {
				t.Errorf("f = %q after a commit following recover, want c", got)
			}
		})
	}
}

// Large staged trees are deleted by a detached process once their
// transaction settles; gc of several such transactions right after raced
// with it over the same files and failed with "readdirent ... no such
// file or directory". (The interleaving is made certain in
// internal/state's TestRemoveTxWhileAnotherDeleterRuns; this is the same
// from outside.)
func TestE2EGCManyRightAfterTheirCommits(t *testing.T) {
	x := newH(t)
	// Over the size above which a staged tree is deleted in the background.
	for d := 0; d < 40; d++ {
		dir := filepath.Join(x.base, fmt.Sprintf("d%02d", d))
		must(t, os.Mkdir(dir, 0o755))
		for i := 0; i < 100; i++ {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("file-with-a-longer-name-%03d.txt", i)), "x\n")
		}
	}
	for round := 0; round < 3; round++ {
		var ids []string
		for i := 0; i < 5; i++ {
			id := fmt.Sprintf("r%d-%c", round, 'a'+i)
			ids = append(ids, id)
			wantCode(t, x.airlock("run", "--workdir", x.base, "--id", id, "--", "sh", "-c", "echo "+id+" > f"), 0)
		}
		// Newest first: its detached deleter is the likeliest to still run.
		slices.Reverse(ids)
		r := x.airlock(append([]string{"gc"}, ids...)...)
		wantCode(t, r, 0)
		for _, id := range ids {
			if !strings.Contains(r.Stdout, "removed "+id) || testbin.Exists(filepath.Join(x.state, "tx", id)) {
				t.Errorf("round %d: gc did not remove %s:\n%s", round, id, r)
			}
		}
	}
}

// A refused undo exits 75, which promises the transaction is kept: it was
// recorded as discarded.
func TestE2ERefusedUndoIsKept(t *testing.T) {
	x := newH(t)
	writeFile(t, filepath.Join(x.base, "f"), "a\n")
	wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "c1", "--", "sh", "-c", "echo b > f"), 0)
	writeFile(t, filepath.Join(x.base, "f"), "edited by hand\n")
	r := x.airlock("undo", "c1", "--workdir", x.base)
	wantCode(t, r, 75)
	wantBlock(t, r, map[string]string{"outcome": "refused", "refusal": "BaseDrift", "refused_paths": "f"})
	id := r.Settle["tx"]
	show := x.airlock("show", id)
	wantCode(t, show, 0)
	if !strings.Contains(show.Stdout, "status:    refused") {
		t.Errorf("the refused undo %s is not kept as refused:\n%s", id, show.Stdout)
	}
	if !testbin.Exists(filepath.Join(x.state, "tx", id, "staged")) {
		t.Errorf("the refused undo's staged workspace is gone")
	}
	if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != "edited by hand\n" {
		t.Errorf("f = %q after the refused undo", got)
	}
	// Kept, it is settled like any refused transaction.
	r = x.airlock("discard", id)
	wantCode(t, r, 0)
	wantBlock(t, r, map[string]string{"outcome": "discarded"})
}

var sizeRE = `([0-9.]+) (B|KiB|MiB|GiB)`

func parseSize(t *testing.T, what, out, pattern string) float64 {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%s: no line matching %q in\n%s", what, pattern, out)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	must(t, err)
	return n * map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m[2]]
}

// gc --dry-run said what it would free and nothing of what it keeps: an
// interrupted transaction holding gigabytes did not show. It must say what
// each kept transaction holds and the total kept, and would-free must be
// what gc then frees, originals included.
func TestE2EGCDryRunSaysWhatIsHeld(t *testing.T) {
	x := newH(t)
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	writeFile(t, filepath.Join(x.base, "big"), big)
	writeFile(t, filepath.Join(x.base, "f"), "a\n")
	// committed: replaces big, whose original the base's store keeps for
	// undo until gc removes the commit.
	wantCode(t, x.airlock("run", "--workdir", x.base, "--id", "done", "--", "sh", "-c", "echo small > big"), 0)
	// interrupted: 4 MiB of new content in its staged tree and as much in
	// its frozen change set.
	staged := x.openTx("held")
	writeFile(t, filepath.Join(staged, "huge"), strings.Repeat(big, 4))
	fault := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=journal-synced"}, "commit", "held")
	if fault.Code != -1 {
		t.Fatalf("the fault point did not kill airlock: %v", fault)
	}

	// done is past its grace with --older-than 0: its state and the
	// original it replaced go.
	dry := x.airlock("gc", "--dry-run", "--older-than", "0")
	wantCode(t, dry, 0)
	held := parseSize(t, "gc --dry-run", dry.Stdout, `(?m)^kept held \(kept: its apply was interrupted.*; holds `+sizeRE+`\)$`)
	if held < 8<<20 {
		t.Errorf("gc --dry-run says the interrupted transaction holds %.0f bytes; its staged and frozen copies alone hold 8 MiB\n%s", held, dry)
	}
	total := parseSize(t, "gc --dry-run", dry.Stdout, `(?m)^kept [0-9]+ transactions? holding `+sizeRE+`$`)
	if total < held {
		t.Errorf("gc --dry-run says %.0f bytes are kept in all, less than held alone (%.0f)\n%s", total, held, dry)
	}
	wouldFree := parseSize(t, "gc --dry-run", dry.Stdout, `(?m)^would free `+sizeRE+`$`)

	r := x.airlock("gc", "--older-than", "0")
	wantCode(t, r, 0)
	freed := parseSize(t, "gc", r.Stdout, `(?m)^freed `+sizeRE+`$`)
	if freed < 1<<20 {
		t.Errorf("gc freed %.0f bytes; the original of big alone is 1 MiB\n%s", freed, r)
	}
	if wouldFree != freed {
		t.Errorf("gc --dry-run said it would free %.0f bytes, gc freed %.0f\ndry run:\n%s\ngc:\n%s", wouldFree, freed, dry, r)
	}
}

// A transaction marked in flight whose open record is corrupt: gc, named,
// keeps it and points to recover; recover does not act on the corrupt
// record, but its journal vouches for itself: recover rolls the base back
// from it (half applied or not yet), clears the marker and says so; then
// gc removes it. Neither sends the user to the other in a loop.
func TestE2ECorruptInflightTransaction(t *testing.T) {
	for _, point := range []string{"journal-synced", "apply:1"} {
		t.Run(point, func(t *testing.T) {
			x := newH(t)
			writeFile(t, filepath.Join(x.base, "f"), "a\n")
			r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=" + point}, "run", "--workdir", x.base, "--id", "bad", "--", "sh", "-c", "echo b > f")
			if r.Code != -1 {
				t.Fatalf("the fault point did not kill airlock: %v", r)
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); point == "apply:1" && got != "b\n" {
				t.Fatalf("f = %q after the kill at apply:1, want b: the base is not half applied", got)
			}
			rec := filepath.Join(x.state, "tx", "bad", "open.json")
			data := testbin.ReadFile(t, rec)
			edited := strings.Replace(data, `"port_base": `, `"port_base": 1`, 1)
			if edited == data {
				t.Fatalf("could not edit %s:\n%s", rec, data)
			}
			must(t, os.WriteFile(rec, []byte(edited), 0o600))

			r = x.airlock("gc", "bad")
			wantCode(t, r, 0)
			if !strings.Contains(r.Stdout, "kept bad") || !strings.Contains(r.Stdout, "airlock recover --workdir "+x.base) {
				t.Errorf("gc of a corrupt transaction marked in flight:\n%s\nwant it kept, pointing to recover", r)
			}
			r = x.airlock("recover", "--workdir", x.base)
			wantCode(t, r, 0)
			for _, w := range []string{"does not match its digest", "its journal survives and verifies", "rolled " + x.base + " back from that journal", "cleared the in-flight marker of bad"} {
				if !strings.Contains(r.Stderr, w) {
					t.Errorf("recover does not say %q:\n%s", w, r)
				}
			}
			if testbin.ReadFile(t, rec) != edited {
				t.Errorf("recover changed the corrupt open record of bad")
			}
			if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != "a\n" {
				t.Errorf("f = %q after recover, want a", got)
			}
			r = x.airlock("gc", "bad")
			wantCode(t, r, 0)
			if testbin.Exists(filepath.Join(x.state, "tx", "bad")) {
				t.Errorf("gc bad after recover kept it:\n%s", r)
			}
			wantCode(t, x.airlock("run", "--workdir", x.base, "--", "sh", "-c", "echo c > f"), 0)
		})
	}
}
