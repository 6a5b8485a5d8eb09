package pool

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/stage"
	"github.com/airlockdev/airlock/internal/testbin"
)

// TestBaseUnchangedByNamedPaths: a base path the daemon names (opened, or
// a file with a second name, which it names at every answer) lets the
// exact path take a pooled tree only where it measures now as the pooled
// open measured it, with a ctime the clock proves older than that
// measurement: a write through the second name, one with its times put
// back, a new file, a removed one and a file written within the clock's
// window of the measurement each send the refresh to measure it.
func TestBaseUnchangedByNamedPaths(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base")
	outside := testbin.RealDir(t)
	must(t, os.MkdirAll(filepath.Join(base, "sub"), 0o755))
	must(t, os.MkdirAll(filepath.Join(base, "node_modules"), 0o755))
	writeAll(t, filepath.Join(base, "linked"), "linked\n")
	writeAll(t, filepath.Join(base, "sub", "gone"), "gone\n")
	writeAll(t, filepath.Join(base, "node_modules", "skipped"), "s\n")
	must(t, os.Link(filepath.Join(base, "linked"), filepath.Join(outside, "linked")))
	waitProven(t, base)
	req := clocked(stage.Request{Base: base, Skip: skipExcluded})
	measure := func() (*manifest.Manifest, int64) {
		t.Helper()
		at := time.Now().UnixNano()
		m, err := manifest.Walk(t.Context(), base, manifest.WalkOptions{Skip: req.Skip})
		must(t, err)
		return m, at
	}
	prev, walkNs := measure()
	for _, c := range []struct {
		paths []string
		want  bool
	}{
		{nil, true},
		{[]string{"", "linked", "sub", "sub/gone"}, true},
		{[]string{"never", "sub/never/deeper"}, true},
		{[]string{"node_modules/skipped"}, true},
	} {
		if got := baseUnchanged(req, prev, c.paths, walkNs); got != c.want {
			t.Errorf("untouched base, named %q: baseUnchanged = %v, want %v", c.paths, got, c.want)
		}
	}

	// Each change below is one a refresh finds by measuring the path.
	changes := []struct {
		what  string
		path  string
		apply func()
	}{
		{"written through its second name", "linked", func() { writeAll(t, filepath.Join(outside, "linked"), "LINKED\n") }},
		{"written with its times put back", "linked", func() {
			fi, err := os.Stat(filepath.Join(base, "linked"))
			must(t, err)
			writeAll(t, filepath.Join(outside, "linked"), "linkeD\n")
			must(t, os.Chtimes(filepath.Join(base, "linked"), fi.ModTime(), fi.ModTime()))
		}},
		{"made", "sub/new", func() { writeAll(t, filepath.Join(base, "sub", "new"), "new\n") }},
		{"removed", "sub/gone", func() { must(t, os.Remove(filepath.Join(base, "sub", "gone"))) }},
	}
	for _, c := range changes {
		prev, walkNs := measure()
		c.apply()
		if baseUnchanged(req, prev, []string{c.path}, walkNs) {
			t.Errorf("%s (%s): taken as unchanged", c.path, c.what)
		}
	}

	// Measured within the clock's window of its last write: the same
	// stat does not prove the same bytes.
	writeAll(t, filepath.Join(base, "racy"), "racy\n")
	prev, walkNs = measure()
	if baseUnchanged(req, prev, []string{"racy"}, walkNs) {
		t.Error("a file written within the clock's window of the measurement: taken as unchanged")
	}
	waitProven(t, base)
	prev, walkNs = measure()
	if !baseUnchanged(req, prev, []string{"racy"}, walkNs) {
		t.Error("the same file, measured once the clock proves it: not taken as unchanged")
	}
}
