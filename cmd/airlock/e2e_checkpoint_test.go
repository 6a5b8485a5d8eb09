package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// checkpointScenario opens t1 over a small base, edits it and takes
// checkpoint 1, then changes the staged tree again; it returns the
// staged path and the tree checkpoint 1 recorded.
func checkpointScenario(t *testing.T, x *h) (string, tree) {
	t.Helper()
	build(t, x.base, tree{"a.txt": F(0o644, "a\n"), "b.txt": F(0o644, "b\n"), "d": D(0o755), "d/c.txt": F(0o644, "c\n")})
	wantCode(t, x.airlock("open", "--workdir", x.base, "--id", "t1"), 0)
	staged := x.stagedPath("t1")
	writeFile(t, filepath.Join(staged, "a.txt"), "a at checkpoint 1\n")
	wantCode(t, x.airlock("checkpoint", "t1"), 0)
	at1 := snapshot(t, staged, nil)
	writeFile(t, filepath.Join(staged, "a.txt"), "a after\n")
	if err := os.Remove(filepath.Join(staged, "b.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(staged, "d/new.txt"), "new\n")
	return staged, at1
}

// TestE2ECheckpointRefusesAFileWrittenWhileRead: a file written between
// the checkpoint's measurement and its read fails the checkpoint, which
// records nothing ("changed while checkpointing"), never a torn file.
func TestE2ECheckpointRefusesAFileWrittenWhileRead(t *testing.T) {
	x := newH(t)
	staged, _ := checkpointScenario(t, x)
	pause := testbin.RealDir(t)
	p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=checkpoint-measured:" + pause}, args: []string{"checkpoint", "t1"}})
	waitFile(t, filepath.Join(pause, "reached"))
	writeFile(t, filepath.Join(staged, "a.txt"), "a written while the checkpoint reads it, and longer\n")
	touch(t, filepath.Join(pause, "continue"))
	r := p.WaitSettled()
	if r.Code != 125 || !strings.Contains(r.Stderr, "a.txt changed while checkpointing") || !strings.Contains(r.Stderr, "nothing was recorded") {
		t.Fatalf("a checkpoint over a file written meanwhile: exit %d\n%s", r.Code, r.Stderr)
	}
	r = x.airlock("checkpoints", "t1", "--json")
	wantCode(t, r, 0)
	if strings.Count(r.Stdout, `"number"`) != 1 {
		t.Errorf("a failed checkpoint was recorded:\n%s", r.Stdout)
	}
}

// TestE2ERewindWithAWriterIsRefusedOrExact: a process airlock did not
// start writes the staged tree while a rewind runs, after the rewind
// recorded the state it starts from, or after it wrote: the rewind fails
// naming what differs from the checkpoint, never reports a mix as done;
// once the writer has stopped, a rewind makes the tree exactly the
// checkpoint's. The base is never touched.
func TestE2ERewindWithAWriterIsRefusedOrExact(t *testing.T) {
	for _, tc := range []struct {
		point string
		write func(t *testing.T, staged string)
		names string
	}{
		{"rewind-checkpointed", func(t *testing.T, staged string) {
			writeFile(t, filepath.Join(staged, "late.txt"), "made after the rewind recorded the tree\n")
		}, "late.txt"},
		{"rewind-written", func(t *testing.T, staged string) {
			writeFile(t, filepath.Join(staged, "a.txt"), "a written over the rewind's\n")
		}, "a.txt"},
	} {
		t.Run(tc.point, func(t *testing.T) {
			x := newH(t)
			staged, at1 := checkpointScenario(t, x)
			base := snapshot(t, x.base, nil)
			pause := testbin.RealDir(t)
			p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=" + tc.point + ":" + pause}, args: []string{"rewind", "t1", "1"}})
			waitFile(t, filepath.Join(pause, "reached"))
			tc.write(t, staged)
			touch(t, filepath.Join(pause, "continue"))
			r := p.WaitSettled()
			if r.Code != 125 || !strings.Contains(r.Stderr, "the staged workspace changed while it was rewound ("+tc.names) || !strings.Contains(r.Stderr, "checkpoint 2 holds the workspace as it was before the rewind") {
				t.Fatalf("a rewind with a writer: exit %d\n%s", r.Code, r.Stderr)
			}
			// The writer has stopped: the next rewind is exact.
			wantCode(t, x.airlock("rewind", "t1", "1"), 0)
			wantTree(t, "staged after the rewind", at1, snapshot(t, staged, nil))
			wantTree(t, "base", base, snapshot(t, x.base, nil))
		})
	}
}
