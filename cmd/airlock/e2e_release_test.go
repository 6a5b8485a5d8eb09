package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EReleaseBuildIgnoresFaultPoints: the binary a user builds (plain
// go build, no tags) must not let the environment kill a commit after its
// journal, nor hang one while it holds the base's lock and write a file
// wherever the variable says. The tests' own binary, built with the tag
// airlock_faults, is the control: the same runs stop there.
func TestE2EReleaseBuildIgnoresFaultPoints(t *testing.T) {
	release := testbin.BuildRelease(t)

	// The variables' names are not even in the release binary: nothing in
	// it can read them.
	for _, b := range []struct {
		path string
		want bool
	}{{release, false}, {airlockBin, true}} {
		data, err := os.ReadFile(b.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"AIRLOCK_TEST_FAULT", "AIRLOCK_TEST_PAUSE"} {
			if got := bytes.Contains(data, []byte(name)); got != b.want {
				t.Errorf("%s contains %s: %v, want %v", b.path, name, got, b.want)
			}
		}
	}

	// prepare opens r1 in a fresh world with bin and changes f in it.
	prepare := func(t *testing.T, bin string) *h {
		t.Helper()
		x := newH(t)
		writeFile(t, filepath.Join(x.base, "f"), "a\n")
		wantCode(t, x.exec(run{bin: bin, args: []string{"open", "--workdir", x.base, "--id", "r1"}}), 0)
		writeFile(t, filepath.Join(x.stagedPath("r1"), "f"), "b\n")
		return x
	}
	committed := func(t *testing.T, x *h, r result) {
		t.Helper()
		wantCode(t, r, 0)
		if r.Settle["outcome"] != "committed" {
			t.Errorf("outcome %q, want committed:\n%v", r.Settle["outcome"], r)
		}
		if got := testbin.ReadFile(t, filepath.Join(x.base, "f")); got != "b\n" {
			t.Errorf("base f = %q after the commit, want %q", got, "b\n")
		}
	}

	t.Run("fault", func(t *testing.T) {
		env := "AIRLOCK_TEST_FAULT=journal-synced"
		x := prepare(t, release)
		r := x.exec(run{bin: release, env: []string{env}, args: []string{"commit", "r1"}})
		if r.Signal != 0 {
			t.Fatalf("%s killed the release binary's commit (%v):\n%v", env, r.Signal, r)
		}
		committed(t, x, r)

		x = prepare(t, airlockBin)
		if r := x.airlockEnv([]string{env}, "commit", "r1"); r.Signal != syscall.SIGKILL {
			t.Errorf("control: %s did not kill the tests' binary (built with -tags %s):\n%v", env, testbin.FaultsTag, r)
		}
	})

	t.Run("pause", func(t *testing.T) {
		// The pause would write <dir>/reached, outside the base, then wait
		// for <dir>/continue, which nobody creates here: the commit would
		// end only when commandTimeout kills it.
		pause := t.TempDir()
		env := "AIRLOCK_TEST_PAUSE=checked:" + pause
		x := prepare(t, release)
		r := x.exec(run{bin: release, env: []string{env}, args: []string{"commit", "r1"}})
		if r.Signal != 0 {
			t.Fatalf("%s: the release binary's commit did not finish by itself (%v):\n%v", env, r.Signal, r)
		}
		committed(t, x, r)
		if ents, err := os.ReadDir(pause); err != nil || len(ents) != 0 {
			t.Errorf("%s: the release binary wrote into %s: %v %v", env, pause, ents, err)
		}

		x = prepare(t, airlockBin)
		p := x.start(run{env: []string{env}, args: []string{"commit", "r1"}})
		waitFile(t, filepath.Join(pause, "reached"))
		touch(t, filepath.Join(pause, "continue"))
		committed(t, x, p.WaitSettled())
	})
}
