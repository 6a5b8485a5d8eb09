package basecheck

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlockdev/airlock/internal/changeset"
	"github.com/airlockdev/airlock/internal/manifest"
	"github.com/airlockdev/airlock/internal/safefs"
	"github.com/airlockdev/airlock/internal/testbin"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newBaseDir makes a base holding files (content by slash path).
func newBaseDir(t *testing.T, files map[string]string) string {
	t.Helper()
	base := filepath.Join(t.TempDir(), "base")
	must(t, os.Mkdir(base, 0o755))
	for rel, content := range files {
		p := filepath.Join(base, filepath.FromSlash(rel))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return base
}

func openRoot(t *testing.T, dir string) *safefs.Root {
	t.Helper()
	r, err := safefs.OpenRoot(dir)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// measured returns the base entry of rel as the change set's Base would
// hold it (Kind none when absent).
func measured(t *testing.T, root *safefs.Root, rel string) manifest.Entry {
	t.Helper()
	e, err := Measure(root, rel)
	must(t, err)
	return e
}

func fileResult(content string) manifest.Entry {
	return manifest.Entry{Kind: manifest.KindFile, Mode: 0o644, Size: int64(len(content)), Digest: manifest.HashBytes([]byte(content))}
}

func driftedPaths(d []Drifted) []string {
	var out []string
	for _, x := range d {
		out = append(out, x.Change.Path)
	}
	return out
}

func TestDrift(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		dirs    []string                                    // extra directories at open
		change  func(set *changeset.Set, root *safefs.Root) // builds the change set from the base at open
		mutate  func(t *testing.T, base string)             // what someone does to the base after open
		drifted []string
		escapes []string
		ops     []string
	}{
		{
			name:  "unchanged file",
			files: map[string]string{"a.txt": "a"},
			change: func(s *changeset.Set, r *safefs.Root) {
				s.Changes = []changeset.Change{{Path: "a.txt", Op: changeset.Modify, Base: mustMeasure(r, "a.txt"), Result: fileResult("A")}}
			},
			mutate: func(t *testing.T, base string) {},
			ops:    []string{"a.txt"},
		},
		{
			name:  "file rewritten",
			files: map[string]string{"a.txt": "a"},
			change: func(s *changeset.Set, r *safefs.Root) {
				s.Changes = []changeset.Change{{Path: "a.txt", Op: changeset.Modify, Base: mustMeasure(r, "a.txt"), Result: fileResult("A")}}
			},
			mutate: func(t *testing.T, base string) {
				must(t, os.WriteFile(filepath.Join(base, "a.txt"), []byte("b"), 0o644))
			},
			drifted: []string{"a.txt"},
		},
		{
			// Measured at open too soon after a change for stat to prove
			// it (open recorded its digest): the bytes decide.
			name:  "racy file, bytes as at open",
			files: map[string]string{"a.txt": "a"},
			change: func(s *changeset.Set, r *safefs.Root) {
				b := mustMeasure(r, "a.txt")
				b.Digest = manifest.HashBytes([]byte("a"))
				s.Changes = []changeset.Change{{Path: "a.txt", Op: changeset.Modify, Base: b, Result: fileResult("A")}}
			},
			mutate: func(t *testing.T, base string) {},
			ops:    []string{"a.txt"},
		},
		{
			// As an edit within the timestamp step of open's measure
			// leaves it: every stat fact as at open, other bytes.
			name:  "racy file, other bytes under the same stat",
			files: map[string]string{"a.txt": "a"},
			change: func(s *changeset.Set, r *safefs.Root) {
				b := mustMeasure(r, "a.txt")
				b.Digest = manifest.HashBytes([]byte("b"))
				s.Changes = []changeset.Change{{Path: "a.txt", Op: changeset.Modify, Base: b, Result: fileResult("A")}}
			},
			mutate:  func(t *testing.T, base string) {},
			drifted: []string{"a.txt"},
		},
		{
			name:  "added path appeared",
			files: map[string]string{"x": "x"},
			change: func(s *changeset.Set, r *safefs.Root) {
				s.Changes = []changeset.Change{{Path: "new.txt", Op: changeset.Add, Result: fileResult("mine")}}
			},
			mutate: func(t *testing.T, base string) {
				must(t, os.WriteFile(filepath.Join(base, "new.txt"), []byte("theirs"), 0o644))
			},
			drifted: []string{"new.txt"},
		},
		{
			name: "dir mode changed",
			dirs: []string{"d"},
			change: func(s *changeset.Set, r *safefs.Root) {
				s.Changes = []changeset.Change{{Path: "d", Op: changeset.Modify, Base: mustMeasure(r, "d"), Result: manifest.Entry{Kind: manifest.KindDir, Mode: 0o700}}}
			},
			mutate: func(t *testing.T, base string) {
				must(t, os.Chmod(filepath.Join(base, "d"), 0o750))
			},
			drifted: []string{"d"},
		},
		{
			name: "dir mtime moved is not drift",
			dirs: []string{"d"},
			change: func(s *changeset.Set, r *safefs.Root) {
				s.Changes = []changeset.Change{{Path: "d", Op: changeset.Modify, Base: mustMeasure(r, "d"), Result: manifest.Entry{Kind: manifest.KindDir, Mode: 0o700}}}
			},
			mutate: func(t *testing.T, base string) {
				must(t, os.WriteFile(filepath.Join(base, "d", "someone-elses"), []byte("x"), 0o644))
			},
			ops: []string{"d"},
		},
		{
			name:  "parent replaced by a file",
			files: map[string]string{"d/f": "f"},
			change: func(s *changeset.Set, r *safefs.Root) {
				s.Changes = []changeset.Change{{Path: "d/f", Op: changeset.Modify, Base: mustMeasure(r, "d/f"), Result: fileResult("F")}}
			},
			mutate: func(t *testing.T, base string) {
				must(t, os.RemoveAll(filepath.Join(base, "d")))
				must(t, os.WriteFile(filepath.Join(base, "d"), []byte("now a file"), 0o644))
			},
			drifted: []string{"d/f"},
		},
		{
			name:  "parent removed under an add",
			files: map[string]string{"d/f": "f"},
			change: func(s *changeset.Set, r *safefs.Root) {
				s.Changes = []changeset.Change{{Path: "d/new", Op: changeset.Add, Result: fileResult("n")}}
			},
			mutate: func(t *testing.T, base string) {
				must(t, os.RemoveAll(filepath.Join(base, "d")))
			},
			drifted: []string{"d/new"},
		},
		{
			name:  "symlink component is an escape",
			files: map[string]string{"d/f": "f", "other/f": "other"},
			change: func(s *changeset.Set, r *safefs.Root) {
				s.Changes = []changeset.Change{{Path: "d/f", Op: changeset.Modify, Base: mustMeasure(r, "d/f"), Result: fileResult("F")}}
			},
			mutate: func(t *testing.T, base string) {
				must(t, os.RemoveAll(filepath.Join(base, "d")))
				must(t, os.Symlink("other", filepath.Join(base, "d")))
			},
			escapes: []string{"d/f"},
		},
		{
			name:  "malformed and git paths are escapes",
			files: map[string]string{"a": "a"},
			change: func(s *changeset.Set, r *safefs.Root) {
				s.Changes = []changeset.Change{
					{Path: "../evil", Op: changeset.Add, Result: fileResult("x")},
					{Path: ".git/config", Op: changeset.Add, Result: fileResult("x")},
					{Path: "/etc/passwd", Op: changeset.Add, Result: fileResult("x")},
					{Path: "a", Op: changeset.Modify, Base: mustMeasure(r, "a"), Result: fileResult("A")},
					{Path: "a/../../x", Op: changeset.Add, Result: fileResult("x")},
					{Path: "sub/.git/hooks/pre-commit", Op: changeset.Add, Result: fileResult("x")},
				}
			},
			mutate:  func(t *testing.T, base string) {},
			escapes: []string{"../evil", ".git/config", "/etc/passwd", "a/../../x", "sub/.git/hooks/pre-commit"},
			ops:     []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := newBaseDir(t, tt.files)
			for _, d := range tt.dirs {
				must(t, os.MkdirAll(filepath.Join(base, d), 0o755))
			}
			root := openRoot(t, base)
			set := &changeset.Set{}
			tt.change(set, root)
			testbin.NextTick(t, t.TempDir()) // a rewrite must move ctime visibly
			tt.mutate(t, base)
			ops, drifted, escapes, err := Drift(root, set)
			if err != nil {
				t.Fatalf("Drift: %v", err)
			}
			var opPaths []string
			for _, op := range ops {
				opPaths = append(opPaths, op.Path)
				if now := measured(t, root, op.Path); !manifest.SameStat(op.Before, now) {
					t.Errorf("op %s: Before %+v is not the base now %+v", op.Path, op.Before, now)
				}
			}
			if got := driftedPaths(drifted); !slices.Equal(got, tt.drifted) {
				t.Errorf("drifted %q, want %q", got, tt.drifted)
			}
			if !slices.Equal(escapes, tt.escapes) {
				t.Errorf("escapes %q, want %q", escapes, tt.escapes)
			}
			if !slices.Equal(opPaths, tt.ops) {
				t.Errorf("ops %q, want %q", opPaths, tt.ops)
			}
		})
	}
}

// mustMeasure is Measure for table setup, where no *testing.T is at
// hand; a failure leaves an entry that cannot match anything.
func mustMeasure(r *safefs.Root, rel string) manifest.Entry {
	e, err := Measure(r, rel)
	if err != nil {
		return manifest.Entry{Path: rel, Kind: manifest.KindOther}
	}
	return e
}
