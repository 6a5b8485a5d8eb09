package main_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// recoverBase and recoverScript make a change set of about 30 operations
// of every kind, so that a fault after the third lands mid-way.
func recoverBase() tree {
	b := tree{
		"t/f2d":       F(0o644, "file to dir\n"),
		"t/d2f/x":     F(0o644, "x\n"),
		"t/l2f":       L("../m/0"),
		"t/f2l":       F(0o644, "file to link\n"),
		"links/rel":   L("../m/1"),
		"links/gone":  L("/etc/hostname"),
		"tree/a/b/c":  F(0o644, "c\n"),
		"tree/a/d":    F(0o644, "d\n"),
		"exe.sh":      F(0o755, "#!/bin/sh\n"),
		"private":     F(0o644, "p\n"),
		"keep/k":      F(0o644, "k\n"),
		"dirmode":     D(0o755),
		"dirmode/dm":  F(0o644, "dm\n"),
		"unchanged/u": F(0o644, "u\n"),
	}
	for i := range 8 {
		b[fmt.Sprintf("m/%d", i)] = F(0o644, fmt.Sprintf("modify me %d\n", i))
	}
	for i := range 4 {
		b[fmt.Sprintf("del/%d", i)] = F(0o644, fmt.Sprintf("delete me %d\n", i))
	}
	return b
}

const recoverScript = `set -e
for i in 0 1 2 3 4 5 6 7; do printf 'modified %s\n' $i >> m/$i; done
rm del/0 del/1 del/2 del/3
mkdir -p add/deep/er
for i in 0 1 2 3; do printf 'added %s\n' $i > add/$i; done
printf 'deep\n' > add/deep/er/leaf
mkdir add/empty
rm t/f2d && mkdir t/f2d && printf 'child\n' > t/f2d/child
rm -rf t/d2f && printf 'now a file\n' > t/d2f
rm t/l2f && printf 'was a link\n' > t/l2f
rm t/f2l && ln -s ../m/2 t/f2l
rm links/rel && ln -s ../m/3 links/rel
rm links/gone
ln -s /nonexistent links/abs
ln -s dangling links/dangle
rm -rf tree
chmod 0644 exe.sh
chmod 0600 private
chmod 0700 dirmode
`

// TestE2EInterruptedApply: an apply killed at any point leaves a base that
// refuses new transactions until recover puts it back exactly; the
// transaction then commits as if nothing had happened.
func TestE2EInterruptedApply(t *testing.T) {
	for _, point := range []string{"journal-synced", "apply:1", "apply:3", "applied"} {
		t.Run(point, func(t *testing.T) {
			x := newH(t)
			build(t, x.base, recoverBase())
			before := snapshot(t, x.base, nil)
			after := x.oracle(recoverScript)
			a, m, d := counts(before, after)
			if ops := a + m + d; ops < 25 {
				t.Fatalf("the change set has only %d operations", ops)
			}

			r := x.airlockEnv([]string{"AIRLOCK_TEST_FAULT=" + point}, "run", "--workdir", x.base, "--id", "crash1", "--", "sh", "-c", recoverScript)
			if r.Signal != syscall.SIGKILL {
				t.Fatalf("airlock was not killed at %s\n%s", point, r)
			}
			killed := snapshot(t, x.base, nil)
			switch point {
			case "journal-synced":
				wantTree(t, "base killed before the first operation", before, killed)
			case "apply:1", "apply:3":
				if len(treeDiff(before, killed)) == 0 || len(treeDiff(after, killed)) == 0 {
					t.Errorf("killed at %s, the base is not half-way: %d paths differ from before, %d from after",
						point, len(treeDiff(before, killed)), len(treeDiff(after, killed)))
				}
			case "applied":
				wantTree(t, "base killed after the apply", after, killed)
			}

			for _, args := range [][]string{
				{"run", "--workdir", x.base, "--", "sh", "-c", "printf 'x\n' > other"},
				{"open", "--workdir", x.base},
			} {
				r := x.airlock(args...)
				wantCode(t, r, 75)
				if !strings.Contains(r.Stderr, "InterruptedApply") || !strings.Contains(r.Stderr, "airlock recover") {
					t.Errorf("%s over an interrupted base: want InterruptedApply and `airlock recover` in the message\n%s", args[0], r)
				}
				wantTree(t, "base after a refused "+args[0], killed, snapshot(t, x.base, nil))
			}
			r = x.airlock("commit", "crash1")
			wantCode(t, r, 75)
			if !strings.Contains(r.Stderr, "InterruptedApply") {
				t.Errorf("commit of the interrupted transaction: want InterruptedApply\n%s", r)
			}

			r = x.airlock("recover", "--workdir", x.base)
			wantCode(t, r, 0)
			wantTree(t, "base after recover", before, snapshot(t, x.base, nil))
			r = x.airlock("recover", "--workdir", x.base)
			wantCode(t, r, 0)
			if !strings.Contains(r.Stderr, "nothing to recover") {
				t.Errorf("a second recover: %s", r)
			}

			r = x.airlock("commit", "crash1")
			wantCode(t, r, 0)
			wantBlock(t, r, map[string]string{"tx": "crash1", "outcome": "committed", "added": itoa(a), "modified": itoa(m), "deleted": itoa(d)})
			wantTree(t, "base after committing again", after, snapshot(t, x.base, nil))
			if v := x.airlock("receipt", "verify", "crash1"); v.Code != 0 {
				t.Errorf("receipt verify: %s", v)
			}
		})
	}
}
