//go:build airlock_known_breaks

package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/testbin"
)

// Guarantees known not to hold yet: each test here fails today, and is
// compiled only with the build tag airlock_known_breaks
// (go test -tags 'airlock_faults airlock_known_breaks' -run KnownBreak ./cmd/airlock).

// TestKnownBreakConcurrentRunOfAnotherStateRoot: the registry that proves
// a pooled tree free knows the running commands of its own state root
// only. A contained run under another state root (AIRLOCK_STATE_DIR) that
// holds a descriptor of this root's tree, handed to it over a socket,
// makes a later run here reuse the tree while it can still write it.
func TestKnownBreakConcurrentRunOfAnotherStateRoot(t *testing.T) {
	x := newH(t)
	x.needContain()
	out := testbin.RealDir(t)
	other := filepath.Join(testbin.RealDir(t), "state")
	tag := fmt.Sprintf("airlock-fd-holder-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { killAll(tag) })
	build(t, x.base, tree{"f": F(0o644, "f\n")})
	backdate(t, x.base, time.Hour)
	ready, goFile, stop := filepath.Join(out, "ready"), filepath.Join(out, "go"), filepath.Join(out, "stop")
	holder := x.start(run{env: []string{"AIRLOCK_STATE_DIR=" + other},
		args: append([]string{"run", "--workdir", x.base, "--"}, partCommand("fd-holder", tag, ready, goFile, stop, tag)...)})
	waitForFile(t, ready, holder)
	giver := x.airlock(append([]string{"run", "--workdir", x.base, "--"}, partCommand("fd-giver", tag)...)...)
	wantBlock(t, giver, map[string]string{"outcome": "no_changes"})
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	next := x.airlock("run", "--workdir", x.base, "--", "true")
	wantBlock(t, next, map[string]string{"outcome": "no_changes"})
	if testbin.Exists(filepath.Join(x.base, "leak.txt")) {
		t.Error("the holder's write, through another state root's run, reached the base")
	}
	os.WriteFile(stop, nil, 0o644)
	holder.WaitSettled()
}
