package journal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/fault"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/testbin"
)

// batchBase and batchEdit make a plan big enough for the apply, the
// backups and the restore to batch their durability into one flush of the
// file system (safefs.FSSyncMin): files rewritten, changed in mode alone
// and deleted beside many new files and directories.
func batchBase() []node {
	var n []node
	for i := range safefs.FSSyncMin + 4 {
		n = append(n, file(fmt.Sprintf("old/f%02d", i), fmt.Sprintf("old %d", i), 0o644))
	}
	return append(n, file("gone/x", "x", 0o644), file("mode.sh", "#!/bin/sh\n", 0o644))
}

func batchEdit(t *testing.T, s string) {
	t.Helper()
	for i := range safefs.FSSyncMin + 4 {
		must(t, os.WriteFile(filepath.Join(s, "old", fmt.Sprintf("f%02d", i)), []byte(fmt.Sprintf("new, longer %d", i)), 0o644))
	}
	must(t, os.RemoveAll(filepath.Join(s, "gone")))
	must(t, os.Chmod(filepath.Join(s, "mode.sh"), 0o755))
	var add []node
	for i := range 2 * safefs.FSSyncMin {
		add = append(add, file(fmt.Sprintf("new/p%d/f%02d", i%4, i), fmt.Sprintf("added %d", i), 0o640))
	}
	build(t, s, append(add, link("new/l", "p0")))
}

// TestBatchedApply applies and restores a plan whose durability is
// batched, where this machine batches it, and proves both exact.
func TestBatchedApply(t *testing.T) {
	p := newPlan(t, batchBase(), batchEdit)
	b := p.newBase(t)
	if s, err := b.root.FSSync(); err != nil || s == nil {
		t.Logf("no syncfs that stands for fsyncs here (%v): the plan is applied fsyncing each file", err)
	} else {
		s.Close()
	}
	before := snapshot(t, b.dir)
	j := p.prepare(t, b)
	if _, err := Apply(context.Background(), b.root, j, p.objects); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	sameTree(t, "base after Apply vs the staged tree", snapshot(t, b.dir), snapshot(t, p.staged))
	restore(t, b, j)
	sameTree(t, "base after Restore vs before", snapshot(t, b.dir), before)
}

// TestRestoreAfterKilledBatchedApply kills a batched apply where every new
// entry is durable under its temporary name and none is in place yet
// (fault point apply-staged), and after each of a sample of steps, and
// restores from the journal the child left.
func TestRestoreAfterKilledBatchedApply(t *testing.T) {
	if !fault.Enabled {
		testbin.Missing(t, "the fault points are live only in a test binary built with -tags %s (go test -tags %[1]s ./...)", testbin.FaultsTag)
	}
	p := newPlan(t, batchBase(), batchEdit)
	for _, point := range []string{"apply-staged", "apply:1", "apply:8", "apply:30", "apply:50"} {
		b := p.newBase(t)
		before := snapshot(t, b.dir)
		p.prepare(t, b)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperApply$")
		cmd.Env = append(os.Environ(), "AIRLOCK_JOURNAL_HELPER=1", "HELPER_BASE="+b.dir, "HELPER_JOURNAL="+b.jdir,
			"HELPER_OBJECTS="+p.objects, "AIRLOCK_TEST_FAULT="+point)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("%s: the helper was not killed there: %v\n%s", point, err, out)
		}
		loaded, err := Load(b.jdir)
		must(t, err)
		restore(t, b, loaded)
		sameTree(t, "base after Restore of an apply killed at "+point, snapshot(t, b.dir), before)
	}
}

// movePlan is a batched plan whose new files include the same bytes at
// three paths and a file in a base directory that is setgid (a file
// created there takes the directory's group; one moved in would not).
func movePlan(t *testing.T) *plan {
	t.Helper()
	base := append(batchBase(), dir("shared", 0o775|fs.ModeSetgid), file("shared/old", "old", 0o644))
	return newPlan(t, base, func(t *testing.T, s string) {
		batchEdit(t, s)
		build(t, s, []node{
			file("dup/a", "the same bytes", 0o644), file("dup/b", "the same bytes", 0o600), file("dup/c/d", "the same bytes", 0o755),
			file("shared/new", "made in a setgid directory", 0o664), file("top.txt", "at the top of the base", 0o644),
		})
	})
}

// TestApplyMovesObjects: where the frozen objects share the base's file
// system and the apply batches its durability, each object becomes one
// new file of the base (gone from the store, the file its only name),
// bytes shared by several paths are copied for all but one, and a file
// whose directory would give a created file something of its own (setgid)
// is copied. The result is the staged tree either way, and restores
// exactly.
func TestApplyMovesObjects(t *testing.T) {
	p := movePlan(t)
	b := p.newBase(t)
	if s, err := b.root.FSSync(); err != nil || s == nil {
		testbin.Missing(t, "no syncfs that stands for fsyncs here (%v): an apply copies every object", err)
	} else {
		s.Close()
	}
	before := snapshot(t, b.dir)
	j := p.prepare(t, b)
	if _, err := Apply(context.Background(), b.root, j, p.objects); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	sameTree(t, "base after Apply vs the staged tree", snapshot(t, b.dir), snapshot(t, p.staged))
	moved, kept := 0, 0
	for _, op := range j.Ops {
		if op.After.Kind != manifest.KindFile || op.Before.Digest == op.After.Digest {
			continue // no new file (a change of mode alone is made in place)
		}
		var st syscall.Stat_t
		must(t, syscall.Lstat(filepath.Join(b.dir, op.Path), &st))
		if st.Nlink != 1 {
			t.Errorf("%s has %d names: a moved object must have only its base name", op.Path, st.Nlink)
		}
		_, err := os.Lstat(changeset.ObjectPath(p.objects, op.After.Digest))
		switch {
		case op.Path == "shared/new":
			if err != nil {
				t.Errorf("the object of %s, in a setgid directory, was moved (%v): it must be copied", op.Path, err)
			}
		case err == nil:
			kept++
		default:
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no object was moved into the base")
	}
	if kept != 0 {
		t.Errorf("%d objects are still in the store after every path that needed them was applied", kept)
	}
	restore(t, b, j)
	sameTree(t, "base after Restore vs before", snapshot(t, b.dir), before)
}

// TestApplyRefusesAlteredObjectToMove: an object altered after the freeze
// is refused before it is moved, as before it is copied, and the base
// restores exactly.
func TestApplyRefusesAlteredObjectToMove(t *testing.T) {
	p := movePlan(t)
	b := p.newBase(t)
	before := snapshot(t, b.dir)
	j := p.prepare(t, b)
	for _, op := range j.Ops {
		if op.Path == "new/p1/f01" {
			must(t, os.WriteFile(changeset.ObjectPath(p.objects, op.After.Digest), []byte("swapped!"), 0o600))
		}
	}
	_, err := Apply(context.Background(), b.root, j, p.objects)
	if err == nil || !strings.Contains(err.Error(), "state was altered") {
		t.Fatalf("Apply = %v, want the altered object refused", err)
	}
	restore(t, b, j)
	sameTree(t, "base after Restore vs before", snapshot(t, b.dir), before)
}
