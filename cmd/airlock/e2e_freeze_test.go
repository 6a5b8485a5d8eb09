package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockdev/airlock/internal/testbin"
)

// TestE2EStagedSwapDuringFreeze is the attack on the freeze: the agent
// lets the commit freeze its first changed file, then exchanges the staged
// directory holding the second for a symlink to a directory outside
// (renameat2 RENAME_EXCHANGE, as a process timing the freeze with inotify
// would). The commit must refuse StagedChanged naming that file, read
// nothing outside the staged tree, leave the base exactly as it was and
// keep the transaction; once the agent puts its directory back, the same
// transaction commits.
func TestE2EStagedSwapDuringFreeze(t *testing.T) {
	for _, backend := range []string{"copy", "overlay"} {
		t.Run(backend, func(t *testing.T) {
			x := newH(t)
			if backend == "overlay" {
				if err := os.MkdirAll(x.state, 0o700); err != nil {
					t.Fatal(err)
				}
				if r := x.airlock("doctor"); !doctorSupports(r.Stdout, "overlay") {
					t.Skipf("overlay unsupported here:\n%s", r.Stdout)
				}
			}
			build(t, x.base, tree{"keep": F(0o644, "keep\n")})
			want := snapshot(t, x.base, nil)
			outside := testbin.RealDir(t)
			const secret = "root:SECRET-HASH:19000:0:99999:7:::\n"
			for _, n := range []string{"a", "b"} {
				if err := os.WriteFile(filepath.Join(outside, n), []byte(secret), 0o600); err != nil {
					t.Fatal(err)
				}
			}

			wantCode(t, x.airlock("open", "--workdir", x.base, "--backend", backend, "--id", "swap"), 0)
			staged := x.stagedPath("swap")
			if err := os.Mkdir(filepath.Join(staged, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(staged, "d", "a"), "a by the agent\n")
			writeFile(t, filepath.Join(staged, "d", "b"), "b by the agent\n")

			pause := testbin.RealDir(t)
			p := x.start(run{env: []string{"AIRLOCK_TEST_PAUSE=freeze:1:" + pause}, args: []string{"commit", "swap"}})
			waitFile(t, filepath.Join(pause, "reached"))
			// d/a is frozen, d/b not yet: swap d for a symlink to outside.
			swap := filepath.Join(staged, "swap")
			if err := os.Symlink(outside, swap); err != nil {
				t.Fatal(err)
			}
			exchange := func() {
				t.Helper()
				if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(staged, "d"), unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
					t.Fatalf("renameat2 RENAME_EXCHANGE in the staged tree: %v", err)
				}
			}
			exchange()
			touch(t, filepath.Join(pause, "continue"))
			r := p.WaitSettled()

			wantCode(t, r, 75)
			wantBlock(t, r, map[string]string{"tx": "swap", "outcome": "refused", "refusal": "StagedChanged", "refused_paths": "d/b"})
			if !strings.Contains(r.Stderr, "commit again") {
				t.Errorf("the refusal does not say what to do:\n%s", r.Stderr)
			}
			wantTree(t, "base after the refused commit", want, snapshot(t, x.base, nil))
			objects := filepath.Join(x.state, "tx", "swap")
			filepath.WalkDir(objects, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && !strings.HasPrefix(p, staged) {
					if b, _ := os.ReadFile(p); strings.Contains(string(b), "SECRET-HASH") {
						t.Errorf("%s holds the secret read from outside the staged tree", p)
					}
				}
				return nil
			})

			// The agent stops and puts its directory back: the kept
			// transaction commits.
			exchange()
			if err := os.Remove(swap); err != nil {
				t.Fatal(err)
			}
			r = x.airlock("commit", "swap")
			wantCode(t, r, 0)
			wantBlock(t, r, map[string]string{"tx": "swap", "outcome": "committed", "added": "2"}) // d/a and d/b; d holds them
			for n, content := range map[string]string{"a": "a by the agent\n", "b": "b by the agent\n"} {
				if got := testbin.ReadFile(t, filepath.Join(x.base, "d", n)); got != content {
					t.Errorf("base d/%s = %q, want %q", n, got, content)
				}
			}
		})
	}
}
