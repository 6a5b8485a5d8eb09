package airlock_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockdev/airlock"
	"github.com/airlockdev/airlock/internal/testbin"
)

// patchOf is the transaction's diff as a patch.
func patchOf(t testing.TB, tx *airlock.Tx) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := tx.Diff(context.Background(), &b, airlock.DiffPatch); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRewindWhileExecWrites: a command Exec runs keeps writing the staged
// tree (it says it is ready through a FIFO, then writes until it is
// ended); a rewind and a checkpoint meanwhile, from another handle of the
// transaction as another process would hold it, are refused
// (*CommandRunningError) and change nothing the command did not. Once it
// has ended, the rewind makes the tree exactly checkpoint 1: its diff is
// checkpoint 1's, byte for byte, and the base is untouched.
func TestRewindWhileExecWrites(t *testing.T) {
	st, tx := openExec(t)
	testbin.WriteFiles(t, tx.Path(), map[string]string{"a.txt": "a at checkpoint 1\n"})
	cp, err := tx.Checkpoint(t.Context(), airlock.CheckpointOptions{Message: "one"})
	if err != nil || cp.Number != 1 || cp.Modified != 1 {
		t.Fatalf("checkpoint 1: %+v %v", cp, err)
	}
	want := patchOf(t, tx)

	ready := filepath.Join(t.TempDir(), "ready")
	if err := mkfifo(ready); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := tx.Exec(ctx, airlock.ExecOptions{Argv: []string{"sh", "-c",
			`echo ready > "$0"; i=0; while :; do i=$((i+1)); echo "$i" > w.txt; echo "b $i" > sub/b.txt; rm -f gone.txt; echo "$i" > gone.txt; done`, ready}})
		done <- err
	}()
	awaitReady(t, ready)

	other, err := st.Tx(tx.ID())
	if err != nil {
		t.Fatal(err)
	}
	var running *airlock.CommandRunningError
	if _, err := other.Rewind(t.Context(), 1); !errors.As(err, &running) {
		t.Errorf("a rewind while the command writes: %v, want *CommandRunningError", err)
	}
	if _, err := other.Checkpoint(t.Context(), airlock.CheckpointOptions{}); !errors.As(err, &running) {
		t.Errorf("a checkpoint while the command writes: %v, want *CommandRunningError", err)
	}
	if cps, err := other.Checkpoints(); err != nil || len(cps) != 1 {
		t.Errorf("after the refusals: %d checkpoints, %v; want 1", len(cps), err)
	}
	cancel()
	<-done

	r, err := other.Rewind(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.To.Number != 1 || r.Saved.Number != 2 || r.Saved.Auto != airlock.CheckpointByRewind {
		t.Errorf("rewound: %+v", r)
	}
	if got := patchOf(t, other); got != want {
		t.Errorf("after the rewind the diff is\n%s\nwant checkpoint 1's\n%s", got, want)
	}
	for _, p := range []string{"w.txt", "gone.txt"} {
		if testbin.Exists(filepath.Join(tx.Path(), p)) {
			t.Errorf("%s, made by the command after checkpoint 1, is still there", p)
		}
	}
	if got := testbin.ReadFile(t, filepath.Join(tx.Base(), "a.txt")); got != "a\n" {
		t.Errorf("the base's a.txt = %q", got)
	}
}

// TestCheckpointContentKeptWhileOpen: a checkpoint's bytes are in the
// base's content store, kept by gc while the transaction is open, and
// collected by the gc that removes the settled transaction.
func TestCheckpointContentKeptWhileOpen(t *testing.T) {
	st, tx := openExec(t)
	content := "only a checkpoint holds this\n"
	testbin.WriteFiles(t, tx.Path(), map[string]string{"c.txt": content})
	if _, err := tx.Checkpoint(t.Context(), airlock.CheckpointOptions{}); err != nil {
		t.Fatal(err)
	}
	// The file moves on: only the checkpoint has those bytes now.
	testbin.WriteFiles(t, tx.Path(), map[string]string{"c.txt": "later\n"})
	sum := sha256.Sum256([]byte(content))
	object := hex.EncodeToString(sum[:])
	kept := func() bool {
		found := false
		filepath.WalkDir(st.Dir(), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == object {
				found = true
			}
			return nil
		})
		return found
	}
	if !kept() {
		t.Fatal("the checkpoint's bytes are not in the state root")
	}
	zero := time.Duration(0)
	if _, _, err := st.GC(t.Context(), airlock.GCOptions{OlderThan: &zero}); err != nil {
		t.Fatal(err)
	}
	if !kept() {
		t.Fatal("gc dropped the bytes of an open transaction's checkpoint")
	}
	if _, err := tx.Rewind(t.Context(), 1); err != nil {
		t.Fatalf("rewind after gc: %v", err)
	}
	if got := testbin.ReadFile(t, filepath.Join(tx.Path(), "c.txt")); got != content {
		t.Errorf("c.txt after the rewind = %q", got)
	}
	if _, err := tx.Discard(t.Context(), airlock.DiscardOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.GC(t.Context(), airlock.GCOptions{OlderThan: &zero}); err != nil {
		t.Fatal(err)
	}
	if kept() {
		t.Error("gc kept a settled transaction's checkpoint bytes")
	}
}

// BenchmarkCheckpoint takes a checkpoint of a 1,000-file tree in which 10
// files changed since the last one: the cost is those ten, not the tree.
// The changes sub-benchmark measures the change set alone (what `airlock
// diff` computes) over the same edits, the floor a checkpoint adds its
// reads and fsyncs to.
func BenchmarkCheckpoint(b *testing.B) {
	for _, name := range []string{"checkpoint", "changes"} {
		b.Run(name, func(b *testing.B) {
			base := filepath.Join(b.TempDir(), "base")
			files := map[string]string{}
			for i := range 1000 {
				files[fmt.Sprintf("d%02d/f%03d.txt", i/50, i)] = fmt.Sprintf("file %d\n%s", i, bytes.Repeat([]byte("x"), 2000))
			}
			testbin.WriteFiles(b, base, files)
			st, err := airlock.OpenStore(filepath.Join(b.TempDir(), "state"))
			if err != nil {
				b.Fatal(err)
			}
			tx, err := st.Open(b.Context(), airlock.OpenOptions{Base: base})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				for k := range 10 {
					p := filepath.Join(tx.Path(), fmt.Sprintf("d%02d/f%03d.txt", k*2, k*100))
					if err := os.WriteFile(p, fmt.Appendf(nil, "edit %d of %d\n", i, k), 0o644); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if name == "changes" {
					_, err = tx.Changes(b.Context())
				} else {
					_, err = tx.Checkpoint(b.Context(), airlock.CheckpointOptions{})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }

// awaitReady reads the FIFO p to its end: the writer has said "ready" and
// closed it. Read whole, so that the writer never writes to a FIFO its
// reader has closed (SIGPIPE would end it before it wrote anything).
func awaitReady(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p) // blocks until the writer opens it
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "ready\n" {
		t.Fatalf("the writer said %q (%v), want ready", b, err)
	}
}

// TestRewindWithAnUncontainedWriter: a process airlock did not start
// (here the test's own shell loop) keeps rewriting w.txt in the staged
// tree while rewinds run. Each rewind either fails saying w.txt changed
// while it read or wrote the tree, or succeeds with every other path
// checkpoint 1's exactly. Once the writer is stopped, a rewind makes the
// whole tree checkpoint 1's again, byte for byte as its diff.
func TestRewindWithAnUncontainedWriter(t *testing.T) {
	_, tx := openExec(t)
	testbin.WriteFiles(t, tx.Path(), map[string]string{"a.txt": "a at checkpoint 1\n", "w.txt": "w at checkpoint 1\n"})
	if _, err := tx.Checkpoint(t.Context(), airlock.CheckpointOptions{}); err != nil {
		t.Fatal(err)
	}
	want := patchOf(t, tx)
	testbin.WriteFiles(t, tx.Path(), map[string]string{"a.txt": "a later\n", "new/n.txt": "n\n"})
	if err := os.Remove(filepath.Join(tx.Path(), "sub", "b.txt")); err != nil {
		t.Fatal(err)
	}

	ready := filepath.Join(t.TempDir(), "ready")
	if err := mkfifo(ready); err != nil {
		t.Fatal(err)
	}
	writer := exec.Command("sh", "-c", `echo ready > "$0"; i=0; while :; do i=$((i+1)); echo "writer $i" > w.txt; done`, ready)
	writer.Dir = tx.Path()
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { writer.Process.Kill(); writer.Wait() }()
	awaitReady(t, ready)

	for i := range 5 {
		_, err := tx.Rewind(t.Context(), 1)
		if err != nil && !strings.Contains(err.Error(), "w.txt changed while checkpointing") && !strings.Contains(err.Error(), "the staged workspace changed while it was rewound (w.txt differ") {
			t.Fatalf("rewind %d with a writer: %v, want success or a refusal naming w.txt only", i, err)
		}
		t.Logf("rewind %d with the writer: %v", i, err)
		if err != nil {
			continue
		}
		for p, content := range map[string]string{"a.txt": "a at checkpoint 1\n", "sub/b.txt": "b\n"} {
			if got, rerr := os.ReadFile(filepath.Join(tx.Path(), p)); string(got) != content {
				t.Errorf("rewind %d reported done with %s = %q (%v)", i, p, got, rerr)
			}
		}
		if testbin.Exists(filepath.Join(tx.Path(), "new")) {
			t.Errorf("rewind %d reported done with new/ still there", i)
		}
	}
	writer.Process.Kill()
	writer.Wait()
	if _, err := tx.Rewind(t.Context(), 1); err != nil {
		t.Fatalf("rewind once the writer stopped: %v", err)
	}
	if got := patchOf(t, tx); got != want {
		t.Errorf("after the rewind the diff is\n%s\nwant checkpoint 1's\n%s", got, want)
	}
}
